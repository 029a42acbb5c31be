"""Many real processes appending to one project at once: nothing lost, nothing doubled, no residue."""
import contextlib
import os

from helpers.counting import CountingReducer
from helpers.files import residue
from helpers.procs import Worker, worker_args
from intent_loop.storage import reading

WRITERS = 32
APPENDS_EACH = 10
RUN_TIMEOUT = 150  # the whole run takes ~10 s on a 2-core machine


@contextlib.contextmanager
def _barrier():
    """A pipe: workers block reading it until the test closes the write end, so all start together."""
    read_fd, write_fd = os.pipe()
    try:
        yield read_fd, write_fd
    finally:
        for fd in (read_fd, write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _start_together(project, count, extra_args):
    """Spawn `count` append workers held at a barrier, then release them all at once."""
    workers = []
    with _barrier() as (read_fd, write_fd):
        try:
            for index in range(count):
                args = worker_args("append", project.data_root, project.root, "--barrier-fd", read_fd,
                                   *extra_args(index))
                workers.append(Worker(args, pass_fds=(read_fd,)))
        except BaseException:
            for worker in workers:
                worker.close()
            raise
        os.close(write_fd)
    return workers


def _finish_all(workers):
    outcomes = []
    try:
        for worker in workers:
            outcomes.append(worker.finish(timeout=RUN_TIMEOUT))
    finally:
        for worker in workers:
            worker.close()
    return outcomes


def test_32_processes_append_10_each_exactly_once(project):
    workers = _start_together(
        project, WRITERS,
        lambda i: ("--count", APPENDS_EACH, "--prefix", f"w{i:02d}", "--deadline", RUN_TIMEOUT),
    )
    outcomes = _finish_all(workers)

    failures = [(code, lines) for code, lines in outcomes if code != 0]
    assert failures == []
    reported = [line.split()[1] for _code, lines in outcomes for line in lines if line.startswith("ok ")]
    verified = reading.verify_all(project, CountingReducer())
    expected_values = {f"w{i:02d}-{n}" for i in range(WRITERS) for n in range(APPENDS_EACH)}

    assert len(reported) == len(set(reported)) == WRITERS * APPENDS_EACH
    assert verified.count == WRITERS * APPENDS_EACH
    assert set(verified.state["values"]) == expected_values
    assert reading.load_verified(project, CountingReducer()).state == verified.state
    assert residue(project.data_root) == []


def test_same_request_id_from_several_processes_at_once_records_one_event(project):
    for round_number in range(3):
        request_id = f"shared-{round_number}"
        workers = _start_together(
            project, 4, lambda _i, request_id=request_id: ("--request-id", request_id, "--value", request_id,
                                                           "--deadline", 60),
        )
        outcomes = _finish_all(workers)

        assert [code for code, _lines in outcomes] == [0, 0, 0, 0]
        ids = {line.split()[1] for _code, lines in outcomes for line in lines if line.startswith("ok ")}
        replayed = sorted(line.split()[2] for _code, lines in outcomes for line in lines if line.startswith("ok "))
        assert len(ids) == 1
        assert replayed == ["0", "1", "1", "1"]

    verified = reading.verify_all(project, CountingReducer())
    assert verified.state["values"] == ["shared-0", "shared-1", "shared-2"]
    assert residue(project.data_root) == []
