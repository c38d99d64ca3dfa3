"""Read back the scalars that tensorboardX wrote: ``log/events.out.tfevents.*`` files of an experiment folder.

An event file is a TFRecord stream: each record is ``uint64 length, uint32 masked-crc32c(length), data,
uint32 masked-crc32c(data)`` (little-endian), and each ``data`` is one serialized ``Event`` protobuf. The ``Event``
message classes come from tensorboardX itself (a core dependency), so reading needs neither TensorFlow nor the
tensorboard package.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ding_lite.errors import output_error

EVENT_GLOB = "events.out.tfevents.*"
EVAL_RETURN_TAG = "eval/return_mean"  # the mean eval return by env step: -m plot's default, a sweep trial's report
EVAL_RETURN_ITER_TAG = "eval/return_mean_iter"  # the same by train iteration
_HEADER = struct.Struct("<QI")  # data length, masked crc32c of the 8 length bytes
_FOOTER_BYTES = 4  # masked crc32c of the data


@dataclass
class ScalarSeries:
    """One scalar tag of one run: ``steps[i]`` is the logged step of ``values[i]``, ``wall_times[i]`` its Unix time."""

    steps: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)


@dataclass
class RunScalars:
    """Every scalar tag of one run, and the wall time its first event file was opened (the run's start)."""

    series: dict[str, ScalarSeries]
    start_time: float | None


def event_files(log_dir: Path) -> list[Path]:
    """The event files of ``log_dir``, oldest first (a resumed run appends a new file; the name holds its time)."""
    return sorted(log_dir.glob(EVENT_GLOB), key=lambda p: (_file_time(p), p.name))


def _file_time(path: Path) -> int:
    parts = path.name.split(".")  # events.out.tfevents.<unix time>.<host>...
    return int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0


def iter_records(path: Path) -> list[bytes]:
    """The record payloads of one TFRecord file. A record cut short at the end (a run still writing, or killed
    mid-write) ends the list; a length whose checksum does not match raises ``ValueError`` naming the file."""
    return [payload for _, payload in _records(path)]


def _records(path: Path) -> list[tuple[int, bytes]]:
    """``(byte offset of the record, payload)`` of each complete record of one TFRecord file."""
    from tensorboardX.record_writer import masked_crc32c

    data = path.read_bytes()
    records = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        length, length_crc = _HEADER.unpack_from(data, pos)
        if masked_crc32c(data[pos:pos + 8]) != length_crc:
            raise ValueError(f"{path}: corrupt event record at byte {pos} (length checksum mismatch)")
        start = pos + _HEADER.size
        end = start + length
        if end + _FOOTER_BYTES > len(data):
            break  # only the data checksum is skipped: pure-Python crc32c over every payload would be slow
        records.append((pos, data[start:end]))
        pos = end + _FOOTER_BYTES
    return records


def read_scalars(log_dir: Path) -> RunScalars:
    """Every ``simple_value`` scalar in the event files of ``log_dir``, by tag, in the order written.

    Example::

        run = read_scalars(Path("cartpole_dqn_seed0/log"))
        run.series["eval/return_mean"].values[-1]
    """
    from tensorboardX.proto.event_pb2 import Event

    series: dict[str, ScalarSeries] = {}
    start_time = None
    for path in event_files(log_dir):
        for payload in iter_records(path):
            event = Event.FromString(payload)
            if start_time is None:
                start_time = event.wall_time  # the file-version event written when the writer opened
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if value.WhichOneof("value") != "simple_value":
                    continue
                s = series.setdefault(value.tag, ScalarSeries())
                s.steps.append(int(event.step))
                s.values.append(float(value.simple_value))
                s.wall_times.append(float(event.wall_time))
    return RunScalars(series, start_time)


def drop_events_after(log_dir: Path, wall_time: float) -> int:
    """Cut every event file of ``log_dir`` back to the events written at or before ``wall_time`` (Unix time); a file
    left with nothing is removed. A resumed run calls it with its checkpoint's time, so that what the killed run
    logged after that checkpoint, and the resumed run logs again, is there once. Returns the events dropped.

    Events are appended in the order they are logged, each stamped with the time it was logged, so a file is cut at
    its first later event (a record cut short by a kill goes with it)."""
    from tensorboardX.proto.event_pb2 import Event

    dropped = 0
    for path in event_files(log_dir):
        records = _records(path)
        cut = next((pos for pos, payload in records if Event.FromString(payload).wall_time > wall_time), None)
        if cut is None:
            cut = records[-1][0] + _HEADER.size + len(records[-1][1]) + _FOOTER_BYTES if records else 0
        dropped += sum(pos >= cut for pos, _ in records)
        if cut >= path.stat().st_size:
            continue
        if cut == 0:
            path.unlink()
        else:
            os.truncate(path, cut)
    return dropped


class ScalarWriter:
    """Scalars to a new event file in ``log_dir`` (``events.out.tfevents.<time>.<host>.<pid>``), written in the
    caller's thread.

    tensorboardX's ``SummaryWriter`` writes from a thread of its own: a write the system refuses (a full disk) ends
    that thread with a traceback, and the writer's queue then blocks the run for ever. Here a refused write is an
    :class:`~ding_lite.errors.OutputError` naming the file, raised where the scalar was logged. Records are buffered
    and flushed at most every ``flush_secs`` (at a logged scalar) and on :meth:`close`."""

    def __init__(self, log_dir: Path, flush_secs: float = 10.0) -> None:
        from tensorboardX.proto.event_pb2 import Event

        self.path, self._file = _new_event_file(Path(log_dir))
        self._flush_secs = flush_secs
        self._last_flush = time.monotonic()
        self._failed = False
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary

        self._write(Event(wall_time=time.time(), step=int(step),
                          summary=Summary(value=[Summary.Value(tag=tag, simple_value=float(value))])))
        if time.monotonic() - self._last_flush >= self._flush_secs:
            self.flush()

    def add_text(self, tag: str, text: str, step: int) -> None:
        """A text summary (shown in tensorboard's Text tab under ``<tag>/text_summary``)."""
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.summary import text as text_summary

        self._write(Event(wall_time=time.time(), step=int(step), summary=text_summary(tag, text)))

    def flush(self) -> None:
        self._guarded(self._file.flush)
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush and close; after a refused write only close (that error was raised already)."""
        if self._file.closed:
            return
        if self._failed:
            with contextlib.suppress(OSError):
                self._file.close()
            return
        self._guarded(self._file.close)

    def _write(self, event: Any) -> None:
        from tensorboardX.record_writer import masked_crc32c

        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        record = header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))
        self._guarded(lambda: self._file.write(record))

    def _guarded(self, write: Callable[[], object]) -> None:
        try:
            write()
        except OSError as exc:
            self._failed = True
            raise output_error(exc, self.path) from exc


def _new_event_file(log_dir: Path) -> tuple[Path, BinaryIO]:
    """A new, empty event file (a name already taken, by a run resumed in the same second, gets a suffix)."""
    base = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}"
    for k in itertools.count():
        path = log_dir / (base if k == 0 else f"{base}.{k}")
        try:
            return path, open(path, "xb")  # noqa: SIM115 (closed by ScalarWriter.close)
        except FileExistsError:
            continue
        except OSError as exc:
            raise output_error(exc, path) from exc
    raise AssertionError("unreachable")
