"""One meaning per name: the keywords renamed before the first release are gone (calling with one is a TypeError),
the renamed functions keep working under their former names with a DeprecationWarning (the test configuration
turns gradcodes' own deprecations into errors everywhere else), the new names are the ones in every public
signature, and files written with the former parameter names still load."""

from __future__ import annotations

import inspect
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
import gradcodes.mpi as gm
import gradcodes.testing as gt


def test_coded_reduce_takes_branching():
    code = gc.coded_reduce(3, 2, 1)
    assert code.n == code.N == 12 and code.branching == 3 and code.params["branching"] == 3
    assert "n" not in code.params
    assert gc.coded_reduce(branching=3, L=2, s=1) == code
    assert gc.coded_reduce_load(3, 2, 1) == gc.coded_reduce_load(branching=3, L=2, s=1)


@pytest.mark.parametrize(("fn", "args", "kwargs"), [
    (gc.stochastic_gc, (6,), dict(degree=2, p=0.2, rng=0)),
    (gc.bernoulli_gc, (6,), dict(degree=2, rng=0)),
    (gc.erasurehead, (6,), dict(degree=2)),
    (gc.optimal_decoding, (6,), dict(degree=3, rng=0)),
])
def test_baselines_take_degree(fn, args, kwargs):
    code = fn(*args, **kwargs)
    assert code.params["degree"] == kwargs["degree"] and "d" not in code.params


# (callable, positional arguments, the keyword removed before the first release): gradcodes 0.1.0 has one name per
# parameter, with no deprecated aliases (seed= for rng=, n= for branching=, batch= for batch_size=, d= for degree=,
# p= for length=, progress= for callback=)
REMOVED = [
    (gc.cyclic_repetition, (6, 2), "seed"),
    (gc.ye_abbe, (6, 1, 2), "seed"),
    (gc.coded_reduce, (3, 2, 1), "seed"),
    (gc.coded_reduce, (None, 2, 1), "n"),
    (gc.coded_reduce_load, (None, 2, 1), "n"),
    (gc.expander_code, (8, 3), "seed"),
    (gc.random_regular_graph, (8, None), "d"),
    (gc.random_regular_graph, (8, 3), "seed"),
    (gc.stochastic_gc, (6, None, 0.2), "d"),
    (gc.stochastic_gc, (6, 2, 0.2), "seed"),
    (gc.bernoulli_gc, (6, None), "d"),
    (gc.bernoulli_gc, (6, 2), "seed"),
    (gc.erasurehead, (6, None), "d"),
    (gc.optimal_decoding, (6, None), "d"),
    (gc.optimal_decoding, (6, 3), "seed"),
    (gc.exponential_straggle_probabilities, (6, 1.5), "seed"),
    (gc.simulate, ("CR",), "n"),
    (gc.simulate, ("CR",), "seed"),
    (gc.simulate_training, (gc.FixedK(3),), "batch"),
    (gc.recommend, (7, 2), "seed"),
    (gc.verify, (None,), "seed"),
    (gc.verify_tree, (None,), "seed"),
    (gc.verify_tree, (None,), "batch"),
    (gc.worst_case_error, (None, 2), "seed"),
    (gc.evaluate_approximate, (None,), "seed"),
    (gc.evaluate_approximate, (None,), "batch"),
    (gt.partial_gradients, (None,), "p"),
    (gc.CodedReduceCode.random_patterns, (None, 3), "seed"),
    (gm.ShiftedExponential, (1e-3,), "seed"),
    (gm.FixedDelay, (0.5,), "seed"),
    (gm.predict, (None, None), "seed"),
    (gm.Master, (None, 4), "p"),
    (gm.Worker, (None, 4, None), "p"),
    (gm.train, (None, None, None, None), "progress"),
    (gm.allreduce_train, (None, None, None), "progress"),
]


@pytest.mark.parametrize(("fn", "args", "old"), REMOVED, ids=[f"{f.__qualname__}({o}=)" for f, _, o in REMOVED])
def test_removed_aliases_are_type_errors(fn, args, old):
    assert old not in inspect.signature(fn).parameters
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'"):
        fn(*args, **{old: 3})


def test_synthetic_problem_has_no_seed_alias():
    from gradcodes.mpi._problem import SyntheticProblem

    with pytest.raises(TypeError, match="unexpected keyword argument 'seed'"):
        SyntheticProblem(points=12, dim=3, seed=3)


def test_stop_on_failure_defaults_agree():
    defaults = {fn.__name__: inspect.signature(fn).parameters["stop_on_failure"].default
                for fn in (gc.verify, gc.verify_tree)}
    assert set(defaults.values()) == {True}, defaults


def test_load_code_save_code_and_the_deprecated_load_save(tmp_path):
    code = gc.cyclic_repetition(6, 2, rng=0)
    path = os.fspath(tmp_path / "c.npz")
    gc.save_code(code, path)
    assert gc.load_code(path) == code
    with pytest.warns(DeprecationWarning, match=r"^gradcodes\.load is deprecated, use gradcodes\.load_code"):
        assert gc.load(path) == code
    with pytest.warns(DeprecationWarning, match=r"^gradcodes\.save is deprecated, use gradcodes\.save_code"):
        gc.save(code, os.fspath(tmp_path / "d.npz"))
    assert gc.load_code(os.fspath(tmp_path / "d.npz")) == code


def test_a_tree_file_written_with_n_still_loads_with_its_tree_decoder(tmp_path):
    code = gc.coded_reduce(3, 2, 1)
    path = os.fspath(tmp_path / "tree.npz")
    gc.save_code(code, path)
    with np.load(path) as f:
        entries = {k: f[k] for k in f.files}
    meta = json.loads(str(entries["meta"]))
    meta["params"]["n"] = meta["params"].pop("branching")          # as files written before the rename
    entries["meta"] = np.array(json.dumps(meta))
    np.savez(path, **entries)
    back = gc.load_code(path)
    assert isinstance(back, gc.CodedReduceCode) and back.branching == 3 and back == code


@settings(max_examples=10)
@given(st.integers(1, 9), st.data())
def test_partial_gradients_takes_length(length, data):
    G = data.draw(gt.partial_gradients(gc.fractional_repetition(4, 1), length=length))
    assert G.shape == (4, length)


def _public_functions():
    for mod in (gc, gt):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type) and name not in ("simulate", "load", "save"):
                yield f"{mod.__name__}.{name}", obj


def test_no_public_signature_uses_a_former_name():
    # batch_size (not batch), degree (not d), branching for a tree's children (never n), length for a gradient
    # length (p is a probability); the simulator's n is renamed with the simulator itself
    bad = []
    for name, fn in _public_functions():
        params = inspect.signature(fn).parameters
        bad += [f"{name}({p}=)" for p in params if p in ("batch", "d")
]
        if "branching" in params or "L" in params:
            bad += [f"{name}(n=)" for p in params if p == "n"]
        ann = params["p"].annotation if "p" in params else None
        if ann is not None and "int" in str(ann) and "Probabilit" not in str(ann):
            bad.append(f"{name}(p: {ann})")
    assert not bad, bad
