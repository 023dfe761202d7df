import pytest


@pytest.fixture(autouse=True)
def _fast_passwords(request: pytest.FixtureRequest) -> None:
    # Personas hash their password with PBKDF2 (over a second each here). Tests that sign in
    # through a live server keep the real hasher, which that server also uses.
    if "portal_server" in request.fixturenames:
        return
    settings = request.getfixturevalue("settings")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def catalog(db: None) -> dict:
    from tests.leaderboard.factories import make_catalog

    return make_catalog()
