"""The linearized examples/bridge_iso_tested.toml of docs/bridge.md, "ss = λ": every D-CSB pair
a spring of its stick stiffness k (`stick`) or its slip stiffness alpha k (`slip`), Pier 1 a
spring of its initial stiffness; the tested pair's estimate its initial (`initial`) or sliding
(`sliding`) stiffness; PG-α's `multiplier_predictor` as given. Written to OUT (a model file in
examples/'s depth, e.g. results/x/lin.toml, so that the record's relative path still holds).

    python3 scripts/bridge/linearize.py stick|slip initial|sliding none|previous OUT
    hybridsim analyze spectral OUT --subcycles 256 --format none \\
        --omega-min W/1024 --omega-max W/1024*1.0000001 --points 2

with W the mode-1 circular frequency `hybridsim analyze spectral` prints for the model
(8.762 rad/s sticking, 1.236 rad/s sliding), so that Δt = Ω/W = 1/1024 s.
"""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
mode, estimate, predictor, out = sys.argv[1:5]
text = open(os.path.join(here, "../../examples/bridge_iso_tested.toml")).read()
k = {"stick": "3.32e8", "slip": "1.162e6"}[mode]
text = text.replace('type = "mostaghel"', 'type = "spring"')
text = re.sub(r"k = 3.32e8\nalpha = 0.0035\ndelta = 0.001", f"k = {k}", text)
text = text.replace('type = "bouc_wen"', 'type = "spring"')
text = re.sub(r"A = 8.607e7\nbeta = 3.5\ngamma = 60.0\nn = 1.0", "k = 8.607e7", text)
pair = {"initial": "3.32e8", "sliding": "1.162e6"}[estimate]
text = re.sub(r"stiffness = \[\[[0-9.e+]+, -[0-9.e+]+\], \[-[0-9.e+]+, [0-9.e+]+\]\]",
              f"stiffness = [[{pair}, -{pair}], [-{pair}, {pair}]]", text)
text = re.sub(r'multiplier_predictor = "\w+"', f'multiplier_predictor = "{predictor}"', text)
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
open(out, "w").write(text)
