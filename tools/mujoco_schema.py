"""Writes MuJoCo's MJCF schema (every element and the attributes it accepts) as phyz reads it.

Each line of the output is `parent/element attribute attribute ...`: an element named by its
parent's tag and its own (MuJoCo's recursive `body` gives `body/body`, `body/geom`, ...).
phyz's loader tells an attribute MuJoCo knows but phyz does not implement (refused by name)
from one MuJoCo does not know (a typo) with it.

    python3 tools/mujoco_schema.py > phyz-core/src/mjcf/mujoco_schema.txt
"""
import re
import sys

import mujoco


def flatten(text):
    """(parent, tag, attributes) for each element of `mj_printSchema`'s indented tree."""
    stack, entries = [], []
    for line in text.splitlines():
        m = re.match(r"^( *)(\(world\))?(\w+) \((.)\)\s*(.*)$", line)
        if m:
            depth = len(m.group(1)) // 3
            del stack[depth:]
            parent = stack[-1] if stack else ""
            stack.append(m.group(3))
            entries.append([parent, m.group(3), m.group(5).split()])
        elif line.strip():
            entries[-1][2].extend(line.split())
    return entries


def main():
    merged = {}
    for parent, tag, attributes in flatten(mujoco.mj_printSchema(False, False)):
        key = f"{parent}/{tag}" if parent else tag
        merged.setdefault(key, set()).update(attributes)
    # MuJoCo's `(world)body` is recursive: a body nests in a body, and the world body (which
    # takes no attributes) has a body's children.
    merged["body/body"] = merged["mujoco/body"]
    merged["mujoco/worldbody"] = set()
    for key in [k for k in merged if k.startswith("body/")]:
        merged["worldbody/" + key[len("body/"):]] = merged[key]
    del merged["mujoco/body"]
    # `mj_printSchema` leaves out <frame>, which bodies and the world hold (and frames nest).
    frame = {"name", "childclass", "pos", "quat", "axisangle", "xyaxes", "zaxis", "euler"}
    for parent in ["body", "worldbody", "frame"]:
        merged[parent + "/frame"] = frame
    # Nor <replicate> (anywhere a frame may be, and in a replicate), whose attributes MuJoCo's
    # reader takes outside the schema: these are the ones it reads.
    replicate = {"childclass", "count", "euler", "offset", "sep"}
    for parent in ["body", "worldbody", "frame", "replicate"]:
        merged[parent + "/replicate"] = replicate
    print(f"# MuJoCo {mujoco.__version__} MJCF schema, from tools/mujoco_schema.py")
    for key in sorted(merged):
        print(" ".join([key, *sorted(merged[key])]))


if __name__ == "__main__":
    sys.exit(main())
