"""Print each global load/store/atomic of a red-team file's kernel with its TTGIR layout (sm_90),
compiled as the bench launch specializes it (the named integer params divisible by 16).
Usage (from the repository root): .venv/bin/python tools/redteam_round34/constructs/layouts.py FILE.json [PARAM ...] [--launch I]"""
import json, re, subprocess, sys, tempfile

args = sys.argv[1:]
f = args.pop(0)
launch = []
if "--launch" in args:
    i = args.index("--launch"); launch = ["--launch", args[i + 1]]; del args[i:i + 2]
e = json.load(open(f))
k = e.get("kernel", e)
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
    json.dump(k, t)
cmd = [sys.executable, "-m", "kernelgen.cli", "compile", "--emit", "ttgir", "--no-cache", t.name] + launch
for p in args:
    cmd += ["--divisible-by-16", p]
ir = subprocess.run(cmd, capture_output=True, text=True)
if ir.returncode:
    print(ir.stderr[-3000:]); sys.exit(1)
text = ir.stdout
for line in text.splitlines():
    if re.match(r"#(blocked|mma|linear|shared|smem)\w* =", line):
        print(line[:200])
for line in text.splitlines():
    m = re.search(r"(tt\.load|tt\.store|tt\.atomic_rmw|tt\.atomic_cas|ttg\.async_copy_global_to_local|ttg\.local_load|gpu\.barrier|ttg\.convert_layout)", line)
    if m:
        lays = re.findall(r"#(blocked\d*|mma\d*|linear\d*|shared\d*)", line)
        print(f"{m.group(1):32s} {sorted(set(lays))}  {line.strip()[:150]}")
