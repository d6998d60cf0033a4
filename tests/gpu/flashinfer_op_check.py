"""On a GPU host, after the flashinfer role: JIT-compile one FlashInfer kernel with nvcc for this GPU and compare
it with a torch reference. Prints the compile time, the max error and where the compiled kernel lives; exits 1
when the error is over the bound. Not part of make test (no GPU in CI): tests/gpu/run_flashinfer_role.sh runs it."""
import glob
import json
import os
import subprocess
import sys
import time

import torch

import flashinfer


def main():
    cap = torch.cuda.get_device_capability()
    torch.manual_seed(0)
    x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.monotonic()
    out = flashinfer.norm.rmsnorm(x, w, eps=1e-6)  # the first call compiles the kernel (JIT, nvcc)
    torch.cuda.synchronize()
    first = time.monotonic() - t0
    t0 = time.monotonic()
    out = flashinfer.norm.rmsnorm(x, w, eps=1e-6)
    torch.cuda.synchronize()
    second = time.monotonic() - t0
    xf = x.float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    err = (out.float() - ref).abs().max().item()
    rel = ((out.float() - ref).abs() / ref.abs().clamp_min(1e-3)).median().item()
    cache = os.path.expanduser("~/.cache/flashinfer")
    objs = sorted(glob.glob(os.path.join(cache, "**", "*.so"), recursive=True))
    elf = ""
    if objs and subprocess.run(["which", "cuobjdump"], capture_output=True, check=False).returncode == 0:
        elf = subprocess.run(["cuobjdump", "--list-elf", objs[0]], capture_output=True, text=True, check=False).stdout
    result = {"gpu": torch.cuda.get_device_name(), "capability": "%d.%d" % cap, "torch": torch.__version__,
              "flashinfer": flashinfer.__version__, "git": getattr(flashinfer, "__git_version__", None),
              "first_call_s": round(first, 2), "second_call_s": round(second, 4), "max_abs_err": err,
              "median_rel_err": rel, "compiled": objs[:5], "cuobjdump_list_elf": elf.strip().splitlines()[:8]}
    print(json.dumps(result, indent=1))
    # bf16 output: one ulp at |ref| up to ~8 is 0.03; a wrong kernel is off by whole units
    return 0 if err < 0.125 and objs else 1


if __name__ == "__main__":
    sys.exit(main())
