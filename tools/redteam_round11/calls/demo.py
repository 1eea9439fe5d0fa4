"""Run a candidate kernel on hand-made call arguments through the interpreter (as verify_call_cpu
does) and print the kernel's outputs next to the task's reference."""
import json, sys, torch
from kernelgen.task.spec import get_task
from kernelgen.lang import nodes as L
from kernelgen.task.variants import bound_call, outputs_by_name
from kernelgen.host.plan import plan_launch, plan_sequence
from kernelgen.interp.execute import execute_sequence
from kernelgen.task.verify import reference_call

def run(path, args, variant=None, orders=False):
    entry = json.load(open(path))
    task = get_task(entry["task"])
    if variant is not None:
        task = [t for t in task.variant_tasks() if t.variant.name == variant][0]
    kernel = L.Kernel.model_validate(entry["kernel"])
    ref_in = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    expected, _ = reference_call(task, ref_in)
    if task.variants:
        call, checked = bound_call(task, kernel, dict(args))
        run = execute_sequence(checked, [plan_launch(checked, call.args)], orders=orders)
        return outputs_by_name(task, call.finish(run.outputs)), expected
    from kernelgen.check.checker import check
    checked = check(kernel)
    run = execute_sequence(checked, plan_sequence(checked, dict(args)), orders=orders)
    got = {o.name: run.outputs[o.name] for o in task.signature.outputs}
    return got, expected
