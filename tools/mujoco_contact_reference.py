"""MuJoCo reference for phyz's contact tests: resting depths of a sphere, a box, a cylinder
(standing and lying on its side) and an ellipsoid on a plane.

Writes tests/reference/contact/rest.csv (header `model,depth`): after 3 s of rest under gravity,
`depth = radius (or half height) - height of the centre`, MuJoCo 4 defaults (elliptic cone, default
solref/solimp, Euler, dt = 2 ms). Regenerate: `python3 tools/mujoco_contact_reference.py`.
"""
import os
import mujoco

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "reference", "contact")

SCENES = {
    "sphere": ("<geom type='sphere' size='0.1'/>", 0.1),
    "box": ("<geom type='box' size='0.1 0.15 0.05'/>", 0.05),
    "cylinder_standing": ("<geom type='cylinder' size='0.1 0.05'/>", 0.05),
    "cylinder_lying": ("<geom type='cylinder' size='0.05 0.1' euler='90 0 0'/>", 0.05),
    "ellipsoid": ("<geom type='ellipsoid' size='0.1 0.15 0.05'/>", 0.05),
}

TEMPLATE = """<mujoco><option timestep='0.002' cone='elliptic'/>
<worldbody><geom type='plane' size='5 5 0.1'/>
<body pos='0 0 {z}'><freejoint/>{geom}</body></worldbody></mujoco>"""


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = ["model,depth"]
    for name, (geom, half) in SCENES.items():
        m = mujoco.MjModel.from_xml_string(TEMPLATE.format(z=half, geom=geom))
        d = mujoco.MjData(m)
        mujoco.mj_step(m, d, nstep=1500)
        rows.append(f"{name},{float(half - d.qpos[2])!r}")
    with open(os.path.join(OUT, "rest.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
