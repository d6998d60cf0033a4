# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Parse nvidia-smi's CSV queries. Private to glm53.serving; standard library only."""

from __future__ import annotations

import csv
import io
import pwd
import re

GPU_QUERY_FIELDS = ("index", "name", "compute_cap", "memory.total", "memory.used", "driver_version",
                    "pci.bus_id", "uuid")
APP_QUERY_FIELDS = ("pid", "process_name", "used_memory", "gpu_bus_id", "gpu_uuid")
_NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "")
DRIVER_NOT_LOADED_HINT = (
    "The NVIDIA driver is not loaded or not installed: nvidia-smi could not talk to it. Install the driver "
    "(580 or newer for CUDA 13), reboot or `modprobe nvidia`, and check `nvidia-smi` by hand.")


# What nvidia-smi prints when a GPU fell off the bus (Xid 79) or its driver is too old to know a field.
LOST_GPU_RE = re.compile(r"Unable to determine the device handle for (?:GPU)?\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")
UNKNOWN_FIELD_RE = re.compile(r'Field "([^"]+)" is not a valid field to query')


def lost_gpu_message(bus_ids):
    return ("GPU(s) at %s are lost: nvidia-smi cannot get a device handle for them (the GPU fell off the bus; "
            "look for Xid 79 in dmesg). Reset the GPU (nvidia-smi -r) or reboot the host before deploying."
            % ", ".join(normalise_bus_id(b) for b in bus_ids))


def old_driver_message(field):
    return ("the NVIDIA driver is too old to be queried: its nvidia-smi does not know the field %r (added in "
            "newer drivers). Upgrade the driver to the 580 series or newer (the card's CUDA 13 toolchain needs it)."
            % field)


class NvidiaSmiParseError(ValueError):
    pass


def _rows(text, fields):
    rows = []
    for line_no, row in enumerate(csv.reader(io.StringIO(text), skipinitialspace=True), start=1):
        if not row or not "".join(row).strip():
            continue
        if row[0].strip().lower() in ("index", "pid"):  # a header line (--format=csv without noheader)
            continue
        if len(row) != len(fields):
            raise NvidiaSmiParseError(
                "nvidia-smi line %d has %d fields, expected %d (%s): %r"
                % (line_no, len(row), len(fields), ", ".join(fields), ",".join(row)))
        rows.append(dict(zip(fields, (c.strip() for c in row))))
    return rows


def _mib(value):
    """'143771', '143771 MiB' or '[N/A]' -> int or None."""
    value = value.strip()
    if value in _NOT_AVAILABLE:
        return None
    m = re.match(r"^(\d+)(?:\s*MiB)?$", value)
    if not m:
        raise NvidiaSmiParseError("not a MiB figure: %r" % value)
    return int(m.group(1))


def _na(value):
    return None if value in _NOT_AVAILABLE else value


def normalise_bus_id(bus_id):
    """'00000000:00:06.0' and '0000:00:06.0' name the same device."""
    if not bus_id:
        return bus_id
    domain, sep, rest = bus_id.partition(":")
    if not sep:
        return bus_id.upper()
    return "%08X:%s" % (int(domain, 16), rest.upper())


def parse_gpus(text):
    gpus = []
    for row in _rows(text, GPU_QUERY_FIELDS):
        try:
            index = int(row["index"])
        except ValueError:
            raise NvidiaSmiParseError("GPU index is not a number: %r" % row["index"])
        gpus.append({
            "index": index,
            "name": row["name"],
            "compute_capability": _na(row["compute_cap"]),
            "memory_total_mib": _mib(row["memory.total"]),
            "memory_used_mib": _mib(row["memory.used"]),
            "driver_version": _na(row["driver_version"]),
            "bus_id": normalise_bus_id(_na(row["pci.bus_id"])),
            "uuid": _na(row["uuid"]),
        })
    return gpus


def _process_user(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    uid = int(line.split()[1])
                    try:
                        return pwd.getpwuid(uid).pw_name
                    except KeyError:
                        return str(uid)
    except (OSError, ValueError):
        pass
    return None


def _process_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def parse_apps(text, gpus, proc_info=True):
    by_uuid = dict((g["uuid"], g["index"]) for g in gpus if g["uuid"])
    by_bus = dict((g["bus_id"], g["index"]) for g in gpus if g["bus_id"])
    apps = []
    for row in _rows(text, APP_QUERY_FIELDS):
        try:
            pid = int(row["pid"])
        except ValueError:
            raise NvidiaSmiParseError("process id is not a number: %r" % row["pid"])
        uuid, bus = _na(row["gpu_uuid"]), normalise_bus_id(_na(row["gpu_bus_id"]))
        apps.append({
            "pid": pid,
            "process_name": row["process_name"],
            "used_memory_mib": _mib(row["used_memory"]),
            "gpu_index": by_uuid.get(uuid, by_bus.get(bus)),
            "gpu_uuid": uuid,
            "bus_id": bus,
            "user": _process_user(pid) if proc_info else None,
            "cmdline": _process_cmdline(pid) if proc_info else None,
        })
    return apps


def version_tuple(version):
    """'580.159.04' -> (580, 159, 4); non-numeric parts are dropped."""
    return tuple(int(p) for p in re.findall(r"\d+", version or ""))


def version_at_least(version, minimum):
    return version_tuple(version) >= version_tuple(minimum)
