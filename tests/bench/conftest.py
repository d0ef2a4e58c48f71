import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).with_name("fixtures") / "results-small.json"


@pytest.fixture
def doc():
    """A small results document made by hand for tests (test_fixture: true)."""
    return json.loads(FIXTURE.read_text())
