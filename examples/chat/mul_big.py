"""Writes mul_big.json: 40 problems of DeepMind's mathematics_dataset `arithmetic__mul_big` (the
extrapolation split), each with the question, the calc call a model would write for it, and the exact answer.

    python3 -m venv venv && venv/bin/pip install "sympy==1.5.1" "mathematics_dataset==1.0.1"
    venv/bin/python examples/chat/mul_big.py > examples/chat/mul_big.json

PyPI's mathematics_dataset 1.0.1 imports only with sympy 1.5.1. `random` and `numpy.random` are seeded, so the
set is the same on every run. The expression is the question's two numbers joined by `*`, as Qwen3.5 writes a
calc call for a product; the answer is the dataset's, as its own text.
"""
import json
import random
import re
import sys

import numpy as np
from mathematics_dataset.modules import arithmetic

SEED = 20261203
COUNT = 40


def main():
    random.seed(SEED)
    np.random.seed(SEED)
    module = arithmetic.test_extra()["mul_big"]
    problems = []
    while len(problems) < COUNT:
        p = module()
        question = str(p.question)
        numbers = re.findall(r"-?\d+(?:\.\d+)?", question)
        if len(numbers) != 2:
            raise SystemExit(f"expected two numbers in {question!r}")
        problems.append({"question": question, "expression": f"{numbers[0]}*{numbers[1]}", "answer": str(p.answer)})
    json.dump({"source": "mathematics_dataset 1.0.1, arithmetic.test_extra()['mul_big'] (extrapolation split)",
               "seed": SEED, "problems": problems}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
