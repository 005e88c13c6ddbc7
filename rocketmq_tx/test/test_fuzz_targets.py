"""
A short, deterministic run of every fuzz target of ``bench/fuzz`` (the long coverage-guided
runs use atheris, see bench/fuzz/README.md): the seed corpus, fixed mutations of it and
Hypothesis-drawn bytes. A target that raises is a decoder bug (or a harness that rotted).
"""

from __future__ import annotations

import importlib.util
import logging
import random
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase


def _load_targets() -> ModuleType:
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        path = root / "bench" / "fuzz" / "targets.py"
        if path.exists():
            spec = importlib.util.spec_from_file_location("rocketmq_tx_fuzz_targets", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return module
    raise RuntimeError("bench/fuzz/targets.py not found: run the tests from the source tree")


targets = _load_targets()

#: Mutations per seed and random inputs per target: a few seconds in all (recovery, which
#: opens a store per input, gets fewer).
BUDGET = {"recovery": (12, 20)}
DEFAULT_BUDGET = (400, 1000)


class FuzzTargetTests(SynchronousTestCase):
    def setUp(self) -> None:
        # Recovery logs each torn record it truncates: expected here, and noisy.
        logging.disable(logging.CRITICAL)
        self.addCleanup(logging.disable, logging.NOTSET)

    def replay(self, name: str) -> None:
        fn = targets.TARGETS[name]
        per_seed, randoms = BUDGET.get(name, DEFAULT_BUDGET)
        rng = random.Random(f"fuzz-{name}")
        inputs = list(targets.seeds(name))
        self.assertTrue(inputs, f"{name} has no seeds")
        inputs += [m for seed in list(inputs) for m in targets.mutations(seed, rng, per_seed)]
        inputs += [rng.randbytes(rng.randint(0, 600)) for _ in range(randoms)]
        for data in inputs:
            self.run_one(name, fn, data)

    def run_one(self, name: str, fn, data: bytes) -> None:  # type: ignore[no-untyped-def]
        try:
            fn(data)
        except Exception as e:
            self.fail(f"fuzz target {name} failed on {data.hex()}: {type(e).__name__}: {e}\n"
                      f"(replay: write the bytes to a file, python bench/fuzz/fuzz.py {name} FILE)")

    def test_target_list(self) -> None:
        self.assertEqual(sorted(targets.TARGETS),
                         sorted(["frame", "json_header", "rocketmq_header", "bodies", "records", "recovery"]))

    def test_frame(self) -> None:
        self.replay("frame")

    def test_json_header(self) -> None:
        self.replay("json_header")

    def test_rocketmq_header(self) -> None:
        self.replay("rocketmq_header")

    def test_bodies(self) -> None:
        self.replay("bodies")

    def test_records(self) -> None:
        self.replay("records")

    def test_recovery(self) -> None:
        self.replay("recovery")

    @settings(max_examples=400, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(["frame", "json_header", "rocketmq_header", "bodies", "records"]), st.binary(max_size=2048))
    def test_drawn_bytes(self, name: str, data: bytes) -> None:
        """Hypothesis-drawn inputs for the fast targets (deterministic: derandomized, no example database)."""
        self.run_one(name, targets.TARGETS[name], data)

    def test_undeclared_error_is_a_crash(self) -> None:
        """The harness reports what a decoder must not raise: a KeyError where only RemotingCommandError is declared."""
        def broken(inp):  # type: ignore[no-untyped-def]
            raise KeyError("x")

        index = [n for n, _d, _e in targets.BODY_DECODERS].index("parse_reset_offset_body")
        self.patch(targets, "BODY_DECODERS", list(targets.BODY_DECODERS))
        targets.BODY_DECODERS[index] = ("parse_reset_offset_body", broken, (targets.RemotingCommandError,))
        self.assertRaises(targets.Bug, targets.TARGETS["bodies"], targets.body_seed("parse_reset_offset_body", b"{}"))

    def test_every_body_decoder_reached(self) -> None:
        """The selector reaches every decoder; each seed of the bodies target picks the one it names."""
        self.assertGreater(len(targets.BODY_DECODERS), 100)
        names = [n for n, _d, _e in targets.BODY_DECODERS]
        self.assertEqual(len(names), len(set(names)))
