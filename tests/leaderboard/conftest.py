import pytest


@pytest.fixture
def catalog(db: None) -> dict:
    from tests.leaderboard.factories import make_catalog

    return make_catalog()
