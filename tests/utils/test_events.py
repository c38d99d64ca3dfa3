"""Reading tensorboardX event files back (ding_lite/utils/events.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from ding_lite.utils.events import event_files, iter_records, read_scalars

pytestmark = pytest.mark.unittest


def _write(log_dir: Path, points: list[tuple[str, float, int]], **kwargs) -> None:
    writer = SummaryWriter(str(log_dir), **kwargs)
    for tag, value, step in points:
        writer.add_scalar(tag, value, step)
    writer.close()


def test_scalars_come_back_by_tag_in_order(tmp_path: Path) -> None:
    _write(tmp_path, [("eval/return_mean", 1.5, 0), ("learn/loss", 0.25, 3), ("eval/return_mean", 9.0, 80)])
    run = read_scalars(tmp_path)
    assert set(run.series) == {"eval/return_mean", "learn/loss"}
    assert run.series["eval/return_mean"].steps == [0, 80]
    assert run.series["eval/return_mean"].values == [1.5, 9.0]
    assert run.series["learn/loss"].values == [0.25]
    walls = run.series["eval/return_mean"].wall_times
    assert run.start_time is not None and run.start_time <= walls[0] <= walls[1]


def test_a_resumed_run_appends_a_second_file(tmp_path: Path) -> None:
    _write(tmp_path, [("eval/return_mean", 1.0, 0)], filename_suffix=".a")
    first = event_files(tmp_path)
    _write(tmp_path, [("eval/return_mean", 2.0, 10)], filename_suffix=".b")
    assert len(event_files(tmp_path)) == 2 and event_files(tmp_path)[0] == first[0]
    assert read_scalars(tmp_path).series["eval/return_mean"].values == [1.0, 2.0]


def test_a_record_cut_short_ends_the_file_and_a_corrupt_length_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, [("a", float(i), i) for i in range(3)])
    (path,) = event_files(tmp_path)
    data = path.read_bytes()
    n = len(iter_records(path))
    path.write_bytes(data[:-3])  # the last record's checksum is cut: a run killed mid-write
    assert len(iter_records(path)) == n - 1
    path.write_bytes(data[:8] + bytes([data[8] ^ 0xFF]) + data[9:])
    with pytest.raises(ValueError, match="corrupt event record at byte 0"):
        iter_records(path)


def test_an_empty_log_folder_has_no_scalars(tmp_path: Path) -> None:
    run = read_scalars(tmp_path)
    assert run.series == {} and run.start_time is None
