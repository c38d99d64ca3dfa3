"""Read back the scalars that tensorboardX wrote: ``log/events.out.tfevents.*`` files of an experiment folder.

An event file is a TFRecord stream: each record is ``uint64 length, uint32 masked-crc32c(length), data,
uint32 masked-crc32c(data)`` (little-endian), and each ``data`` is one serialized ``Event`` protobuf. The ``Event``
message classes come from tensorboardX itself (a core dependency), so reading needs neither TensorFlow nor the
tensorboard package.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

EVENT_GLOB = "events.out.tfevents.*"
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
        records.append(data[start:end])
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
