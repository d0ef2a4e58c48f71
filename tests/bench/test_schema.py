import copy
from pathlib import Path

import pytest

from sgemm.bench import schema

FIXTURE = Path(__file__).with_name("fixtures") / "results-small.json"


def test_fixture_is_valid_and_marked(doc):
    assert schema.validate(doc) is doc
    assert doc["test_fixture"] is True          # never mistaken for a measurement
    assert {r["status"] for r in doc["results"]} == {"ok", "failed", "skipped"}


def test_load(tmp_path):
    assert schema.load(FIXTURE)["schema"] == "sgemm-bench"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(schema.SchemaError, match="not JSON"):
        schema.load(bad)


def _break(doc, fn):
    d = copy.deepcopy(doc)
    fn(d)
    with pytest.raises(schema.SchemaError) as e:
        schema.validate(d)
    return e.value


def test_rejects_broken_documents(doc):
    _break(doc, lambda d: d.pop("results"))
    _break(doc, lambda d: d.update(schema="other"))
    _break(doc, lambda d: d.update(status="finished"))
    _break(doc, lambda d: d["ceilings"].update(fp32_peak_tflops=0))
    _break(doc, lambda d: d["env"].pop("device"))


def test_rejects_broken_records(doc):
    ok = next(i for i, r in enumerate(doc["results"]) if r["status"] == "ok")
    bad = next(i for i, r in enumerate(doc["results"]) if r["status"] == "failed")
    _break(doc, lambda d: d["results"][ok].update(samples_ms=[]))
    _break(doc, lambda d: d["results"][ok].update(q1_ms=1e9))
    _break(doc, lambda d: d["results"][ok].update(kind="cutlass"))
    _break(doc, lambda d: d["results"][ok]["shape"].update(m=0))
    _break(doc, lambda d: d["results"][ok].update(flops=True))
    _break(doc, lambda d: d["results"][bad].update(error=None))
    e = _break(doc, lambda d: [r.pop("runner") for r in d["results"]])
    assert len(e.problems) == len(doc["results"])
    assert "more" in str(e)


def test_not_an_object():
    with pytest.raises(schema.SchemaError):
        schema.validate([])
