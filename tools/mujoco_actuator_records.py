"""Random stacks of actuator default classes, and how MuJoCo compiles each (or refuses it).

Writes tests/reference/actuator_records/cases.txt, read by tests/actuator_records.rs: one case
per model, `=== ok: <gain> | <bias> | <dynamics> | <ctrl> | <act> | acc0 <acc0>` (type and
numbers of each; limited flag and range) or `=== error: <MuJoCo's message>`, then the model.
Deterministic (fixed seed); regenerate from the repository root with

    python3 tools/mujoco_actuator_records.py 1 300 > tests/reference/actuator_records/cases.txt
"""
import random, sys, mujoco
R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
TAGS = ['general', 'motor', 'position', 'velocity', 'intvelocity', 'damper', 'cylinder', 'muscle']
ATTRS = {
  'general': ['gainprm', 'biasprm', 'dynprm', 'gaintype', 'biastype', 'dyntype', 'ctrlrange', 'ctrllimited', 'inheritrange'],
  'motor': ['ctrlrange', 'ctrllimited'],
  'position': ['kp', 'kv', 'dampratio', 'timeconst', 'inheritrange', 'ctrlrange'],
  'velocity': ['kv', 'ctrlrange'],
  'intvelocity': ['kp', 'kv', 'dampratio', 'inheritrange', 'actrange'],
  'damper': ['kv', 'ctrlrange'],
  'cylinder': ['timeconst', 'area', 'diameter', 'bias'],
  'muscle': ['timeconst', 'range', 'force', 'scale', 'lmin', 'lmax'],
}
def num(lo, hi): return round(R.uniform(lo, hi), 2)
def value(a, tag):
    if a in ('gainprm', 'biasprm'): return ' '.join(str(num(-3, 3)) for _ in range(R.randint(1, 3)))
    if a == 'dynprm': return ' '.join(str(num(0.01, 1)) for _ in range(R.randint(1, 3)))
    if a == 'gaintype': return R.choice(['fixed', 'affine', 'muscle'])
    if a == 'biastype': return R.choice(['none', 'affine', 'muscle'])
    if a == 'dyntype': return R.choice(['none', 'integrator', 'filter', 'filterexact', 'muscle'])
    if a in ('ctrlrange', 'actrange'): return R.choice(['-1 1', '0 2', '0 0.5'])
    if a == 'ctrllimited': return R.choice(['true', 'false', 'auto'])
    if a == 'inheritrange': return R.choice(['0', '1', '0.5'])
    if a in ('kp', 'kv', 'area', 'force', 'scale'): return str(num(0.1, 20))
    if a == 'dampratio': return str(num(0.1, 2))
    if a == 'timeconst': return str(num(0, 0.5)) if tag != 'muscle' else f'{num(0.005, 0.05)} {num(0.02, 0.1)}'
    if a == 'diameter': return str(num(0.05, 1))
    if a == 'bias': return ' '.join(str(num(-2, 2)) for _ in range(3))
    if a == 'range': return R.choice(['0.6 1.2', '0.7 1.1'])
    if a == 'lmin': return '0.4'
    if a == 'lmax': return '1.7'
    if a == 'tausmooth': return str(num(0, 0.3))
    raise KeyError(a)
def element(tag, extra=''):
    attrs = R.sample(ATTRS[tag], R.randint(0, min(3, len(ATTRS[tag]))))
    return f'<{tag}{extra} ' + ' '.join(f'{a}="{value(a, tag)}"' for a in attrs) + '/>'
def case():
    top = [element(t) for t in R.sample(TAGS, R.randint(0, 2))]
    inner = [element(t) for t in R.sample(TAGS, R.randint(0, 3))]
    tag = R.choice(TAGS)
    act = element(tag, ' class="b" joint="j"')
    return f'''<mujoco>
  <compiler autolimits="{R.choice(['true', 'false'])}"/>
  <default>
    <default class="a">
      {' '.join(top)}
      <default class="b">
        {' '.join(inner)}
      </default>
    </default>
  </default>
  <worldbody>
    <body><joint name="j" type="slide" axis="1 0 0" limited="true" range="-0.3 0.5"/><geom size=".1" mass="2"/></body>
  </worldbody>
  <actuator>
    {act}
  </actuator>
</mujoco>
'''
GAIN = {0: 'fixed', 1: 'affine', 2: 'muscle'}
BIAS = {0: 'none', 1: 'affine', 2: 'muscle'}
DYN = {0: 'none', 1: 'integrator', 2: 'filter', 3: 'filterexact', 4: 'muscle'}
n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
cases, rows = [], []
f = lambda xs: ' '.join(repr(float(x)) for x in xs)
for k in range(n):
    xml = case()
    try:
        m = mujoco.MjModel.from_xml_string(xml)
        out = ('ok', f"{GAIN[m.actuator_gaintype[0]]} {f(m.actuator_gainprm[0])} | {BIAS[m.actuator_biastype[0]]} {f(m.actuator_biasprm[0])} | "
               f"{DYN[m.actuator_dyntype[0]]} {f(m.actuator_dynprm[0][:3])} | {int(m.actuator_ctrllimited[0])} {f(m.actuator_ctrlrange[0])} | "
               f"{int(m.actuator_actlimited[0])} {f(m.actuator_actrange[0])} | acc0 {f(m.actuator_acc0[:1])}")
    except Exception as e:
        out = ('error', str(e).splitlines()[0])
    cases.append((xml, out))
compact = lambda xml: ''.join(line.strip() + '\n' for line in xml.splitlines() if line.strip())
sys.stdout.write(''.join(f'=== {o[0]}: {o[1]}\n{compact(x)}' for x, o in cases))
