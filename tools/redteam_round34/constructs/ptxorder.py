"""The order of global loads/stores/atomics and bar.sync in a file's PTX (sm_90, bench specialization),
consecutive repeats collapsed. Usage: ptxorder.py FILE.json [PARAM ...] [--launch I]"""
import json, re, subprocess, sys, tempfile
args = sys.argv[1:]
f = args.pop(0)
launch = []
if "--launch" in args:
    i = args.index("--launch"); launch = ["--launch", args[i + 1]]; del args[i:i + 2]
e = json.load(open(f)); k = e.get("kernel", e)
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
    json.dump(k, t)
cmd = [sys.executable, "-m", "kernelgen.cli", "compile", "--emit", "ptx", "--no-cache", t.name] + launch
for p in args:
    cmd += ["--divisible-by-16", p]
r = subprocess.run(cmd, capture_output=True, text=True)
if r.returncode:
    print(r.stderr[-3000:]); sys.exit(1)
seq = []
for line in r.stdout.splitlines():
    s = line.strip()
    m = re.match(r"(@%p\d+\s+)?((ld|st)\.global[\w.]*|(red|atom)\.[\w.]*|bar\.sync|\$L\w+:|bra[\w.]*)", s)
    if m:
        w = m.group(2)
        if seq and seq[-1][0] == w:
            seq[-1][1] += 1
        else:
            seq.append([w, 1])
print(" | ".join(f"{w}x{n}" if n > 1 else w for w, n in seq))
