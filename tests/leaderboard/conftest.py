import pytest

from leaderboard.selectors import board_cache_invalidate


@pytest.fixture(autouse=True)
def _fresh_board_cache() -> None:
    # The cache outlives a test's database rollback; start every test from a new generation.
    board_cache_invalidate()


@pytest.fixture
def catalog(db: None) -> dict:
    from tests.leaderboard.factories import make_catalog

    return make_catalog()
