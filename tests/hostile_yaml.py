"""A YAML alias bomb ("billion laughs"): a few hundred bytes that expand ninefold per level."""


def alias_bomb(depth: int, key: str = "notes") -> str:
    """Top-level keys l0..l{depth} that nest aliases, then `key: *l{depth}` (9**depth strings)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, depth + 1):
        ref = f"*l{level - 1}"
        lines.append(f"l{level}: &l{level} [{', '.join([ref] * 9)}]")
    lines.append(f"{key}: *l{depth}")
    return "\n".join(lines) + "\n"


def deeply_nested(depth: int, opening: str = "[", closing: str = "]") -> str:
    """A flow collection nested `depth` levels deep: two bytes a level, and PyYAML's composer recurses
    once per level (past Python's recursion limit at about 1,000 levels)."""
    return opening * depth + closing * depth
