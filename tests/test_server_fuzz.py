"""A property-based fuzz of ``neardup serve`` from its own OpenAPI document (schemathesis), on a
real server: whatever the generated request, the answer is never a 5xx, and every answer matches
the schema the document declares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from server_helpers import KEYS, Server, build_index, running

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("fuzz")
    index = str(folder / "idx.db")
    build_index(folder, index)
    with running(folder, index, "--max-texts", "50") as server:
        yield server


def test_no_answer_is_a_server_error(fuzzed: Server) -> None:
    from hypothesis import given

    api = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 8
    headers = {"Authorization": f"Bearer {KEYS['admin']}"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def answer(case: object) -> None:
            response = case.call(headers=headers)  # type: ignore[attr-defined]
            assert response.status_code < 500, (case, response.status_code, response.text)
            case.validate_response(response)  # type: ignore[attr-defined]

        answer()
