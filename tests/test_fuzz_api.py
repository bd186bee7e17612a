"""Fuzz the public API: bad values of every parameter raise a documented exception (ValueError or TypeError,
including their subclasses SizeLimitError, CodeFileError, DecodingError) quickly -- never another exception type,
a MemoryError or a hang."""

import math
import os
import signal
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcodes as gc

#: Bad (or borderline) values tried for every parameter.
BAD_VALUES = [
    -1, 0, 1, -(10**18), 10**18, 2**63, 2**200, math.nan, math.inf, -math.inf, 2.5, 3.0, -0.5, True, False,
    None, "3", "x", "", b"3", [], [1, -1], {}, {"a": 1}, (0.5, 0.5), object(), np.float32(np.nan), np.int64(-3),
    complex(1, 1), np.zeros((2, 2)), np.array([0.5] * 7), np.random.SeedSequence(0),
]

_FR = gc.fractional_repetition(6, 1)
_CR = gc.cyclic_repetition(7, 2, rng=0)
_EX = gc.expander_code(8, 3, rng=0)
_TREE = gc.coded_reduce(3, 2, 1)
_HET = gc.heterogeneous([0.1, 0.2, 0.3], 3)
_P3 = [0.1, 0.2, 0.3]
_GA = gc.graph_assignment_code(6, 3, rng=0)
_PL = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3], [0, 1, 2, 3]]
_FANO = gc.bibd_code("projective_plane", 2)
_ADV = gc.adversarial_gc(_PL, 1, 1)
_PS = gc.partial_straggler_code(5, 1, 2)
_A4 = [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]]

#: name -> (callable, valid keyword arguments); every keyword is fuzzed in turn.
API = {
    "uncoded": (gc.uncoded, dict(n=4, k=None, field="real")),
    "fractional_repetition": (gc.fractional_repetition, dict(n=6, s=1, k=None, field="real")),
    "cyclic_repetition": (gc.cyclic_repetition, dict(n=5, s=1, k=None, rng=0, H=None, field="real", refine=1)),
    "cyclic_mds": (gc.cyclic_mds, dict(n=7, s=2, field="complex", placement="centered", normalize="sum")),
    "stable_binary": (gc.stable_binary, dict(n=7, s=2, k=None, field="real")),
    "grouped_mds": (gc.grouped_mds, dict(n=7, s=2)),
    "grouped_random": (gc.grouped_random, dict(n=13, s=4, extra=1, rng=None, candidates=1, limit=200,
                                               block_seeds=None, certificates=None, refine=2)),
    "by_blocks": (gc.by_blocks, dict(code=_FR)),
    "blocks_of": (gc.blocks_of, dict(code=_FR)),
    "recommend": (gc.recommend, dict(n=7, s=2, m=1, max_load=None, rtol=1e-12, samples=5, rng=0, quick=True,
                                     certify_seconds=1.0, field="real")),
    "ye_abbe": (gc.ye_abbe, dict(n=6, s=1, m=2, k=None, nodes="fourier", rng=None, spacing=None, stride=None,
                                 field="real")),
    "coded_reduce": (gc.coded_reduce, dict(branching=3, L=2, s=1, inner=None, P=None, field=None, rng=0)),
    "coded_reduce_load": (gc.coded_reduce_load, dict(branching=3, L=2, s=1)),
    "expander_code": (gc.expander_code, dict(n=8, degree=3, graph="random", rng=0, s=None, field="real",
                                             require_connected=True)),
    "random_regular_graph": (gc.random_regular_graph, dict(n=8, degree=3, rng=0, max_tries=10)),
    "margulis_gabber_galil_graph": (gc.margulis_gabber_galil_graph, dict(N=3)),
    "margulis_code": (gc.margulis_code, dict(N=3, s=None, field="real")),
    "random_biregular_graph": (gc.random_biregular_graph, dict(n=6, k=4, degree=2, rng=0, max_tries=10)),
    "bipartite_expander_code": (gc.bipartite_expander_code, dict(n=6, k=4, degree=2, graph="random", rng=0, s=None,
                                                                 field="real")),
    "graph_assignment_code": (gc.graph_assignment_code, dict(k=6, degree=3, graph="random", rng=0, s=None,
                                                             field="real")),
    "graph_assignment_error": (gc.graph_assignment_error, dict(code=_GA, responders=[0, 1, 2])),
    "adversarial_gc": (gc.adversarial_gc, dict(placement=_PL, s=1, a=1, m=None, k=None, nodes=None, field="real",
                                                  angles=None)),
    "adversarial_comm_cost": (gc.adversarial_comm_cost, dict(placement=_PL, s=1, a=1)),
    "decode_adversarial": (gc.decode_adversarial, dict(code=_ADV, responders=[0, 1, 2, 3], messages=np.ones((4, 2)),
                                                       rtol=1e-8, length=None)),
    "verify_adversarial": (gc.verify_adversarial, dict(code=_ADV, limit=30, rng=0)),
    "heterogeneous": (gc.heterogeneous, dict(p=_P3, k=3, scheme="nw", warn=False)),
    "optimal_row_sums": (gc.optimal_row_sums, dict(p=_P3, k=3)),
    "song_choi_allocation": (gc.song_choi_allocation, dict(p=_P3, k=3, scheme="nw")),
    "ignore_stragglers": (gc.ignore_stragglers, dict(n=4, p=None, decoder=None)),
    "stochastic_gc": (gc.stochastic_gc, dict(n=4, degree=2, p=0.2, k=None, assignment="cyclic", rng=0)),
    "bernoulli_gc": (gc.bernoulli_gc, dict(n=4, degree=2, k=None, p=None, rng=0, decoder="optimal")),
    "erasurehead": (gc.erasurehead, dict(n=4, degree=2, k=None, p=None, decoder="group")),
    "optimal_decoding": (gc.optimal_decoding, dict(n=6, degree=3, p=None, rng=0, decoder="optimal")),
    "heterogeneous_exact": (gc.heterogeneous_exact, dict(speeds=[1, 2, 3, 4], s=1, k=None, field="real")),
    "heterogeneous_loads": (gc.heterogeneous_loads, dict(speeds=[1, 2, 3, 4], s=1, k=None)),
    "min_time_heterogeneous": (gc.min_time_heterogeneous, dict(speeds=[1, 2, 3, 4], s=1, k=None, integral=True)),
    "robust_heterogeneous_exact": (gc.robust_heterogeneous_exact, dict(speeds=[1, 2, 3, 4], s=1, k=None,
                                                                       misestimated=1, slowdown=2, field="real")),
    "worst_time_heterogeneous": (gc.worst_time_heterogeneous, dict(speeds=[1, 2, 3, 4], s=1, k=None, misestimated=1,
                                                                   slowdown=2, extra=None)),
    "bibd_code": (gc.bibd_code, dict(design="projective_plane", q=3, s=None, field="real")),
    "block_design": (gc.block_design, dict(design="affine_plane", q=3)),
    "stochastic_bibd": (gc.stochastic_bibd, dict(design="projective_plane", q=2, p=0.2)),
    "product_code": (gc.product_code, dict(first=_FANO, second=_FANO, s=None)),
    "min_load": (gc.min_load, dict(n=7, s=2, m=1, k=None)),
    "min_load_heterogeneous": (gc.min_load_heterogeneous, dict(n=4, k=4)),
    "straggle_probabilities": (gc.straggle_probabilities, dict(p=0.2, n=4, exact=None, name="p")),
    "exponential_straggle_probabilities": (gc.exponential_straggle_probabilities,
                                           dict(n=4, tau=1.5, psi=(0.1, 2.0), rng=0)),
    "simulate": (gc.simulate, dict(schemes="CR", branching=3, L=2, s=1, s_gc=None, m_data=1000, a=5e-5, mu=None,
                                   t_c=0.05, t_step=0.0, alpha=0.0, overlap=True, iters=10, rng=0, return_samples=False,
                                   return_responders=False, policy=None, model=None, deadline=None,
                                   time_budget=None, progress=None)),
    "simulate_training": (gc.simulate_training, dict(policy=gc.FixedK(2), n=4, code=None, time_budget=None,
                                                     updates=5, batch_size=2, points=40, dim=3, noise=1.0, lr=0.05,
                                                     a=1e-3, mu=None, model=None, t_c=0.0, rng=0)),
    "verify": (gc.verify, dict(code=_CR, limit=None, samples=20, search=False, rng=0, rtol=None, decoder=None,
                               field=None, stop_on_failure=True, batch_size=None, progress=False,
                               dtype=np.float64, time_budget=10.0, search_seconds=1.0, workers=1,
                               checkpoint=None, checkpoint_every=60.0, comm=None)),
    "verify_tree": (gc.verify_tree, dict(code=_TREE, limit=10, samples=10, search=False, rng=0, rtol=None,
                                         batch_size=64, max_failures=5, search_budget=None, dtype=np.float64,
                                         stop_on_failure=False, progress=False, time_budget=10.0, workers=1,
                                         checkpoint=None, checkpoint_every=60.0, comm=None)),
    "multi_message_code": (gc.multi_message_code, dict(n=5, r=2, field="real", rtol=1e-8)),
    "multi_message_time": (gc.multi_message_time, dict(n=5, r=2, a=1.0, mu=1.0, protocol="multi")),
    "partial_straggler_code": (gc.partial_straggler_code, dict(n=5, s=1, m=2, assignment=None, order="matching",
                                                               field="real", rtol=1e-8)),
    "chunk_order": (gc.chunk_order, dict(assignment=_A4, method="matching")),
    "q_max": (gc.q_max, dict(assignment=_A4, order=[[0, 1], [1, 2], [2, 3], [3, 0]], m=1)),
    "verify_partial": (gc.verify_partial, dict(code=_PS, limit=None, samples=20, rng=0, rtol=None, batch_size=64,
                                               max_failures=5, dtype=np.float64, stop_on_failure=True,
                                               progress=False, time_budget=10.0)),
    "simulate_partial": (gc.simulate_partial, dict(code=_PS, model=None, iters=10, chunk_points=1.0,
                                                   chunk_times="even", latency=0.0, rng=0, deadlines=[2.0],
                                                   classical=None)),
    "worst_case_error": (gc.worst_case_error, dict(code=_EX, s=2, decoder=None, limit=30, samples=10, search=False,
                                                   rng=0, batch_size=16, search_steps=1, neighbours=4, structured=4,
                                                   time_budget=None, progress=False)),
    "approximation_error": (gc.approximation_error, dict(code=_EX, responders=[0, 1, 2, 3], decoder=None)),
    "evaluate_approximate": (gc.evaluate_approximate, dict(code=_HET, gradients=None, p=None, decoder=None,
                                                           method="auto", samples=100, rng=0, batch_size=64,
                                                           max_enumerate=8, time_budget=None, progress=False)),
    "closed_form_error": (gc.closed_form_error, dict(code=_HET, gradients=None, p=None, decoder=None)),
    "GradientCode": (gc.GradientCode, dict(B=_FR.B, s=1, m=1, rtol=1e-8)),
    "ApproximateCode": (gc.ApproximateCode, dict(B=np.eye(3), straggle_probabilities=None, s=None)),
    "NullSpaceDecoder": (gc.NullSpaceDecoder, dict(rtol=1e-8, refine=1)),
    "decode": (_FR.decode, dict(responders=[0, 2, 3, 4, 5], messages=_FR.encode(np.ones((6, 3))), decoder=None,
                                length=None, return_info=False, rows="auto")),
    "decoding_matrix": (_CR.decoding_matrix, dict(responders=[0, 1, 2, 3, 4], decoder=None, dtype=np.float64)),
    "encode": (_FR.encode, dict(partials=np.ones((6, 3)), out=None)),
    "save_code": (gc.save_code, dict(code=_FR, path="/dev/null/x.npz")),
    "load_code": (gc.load_code, dict(path="/nonexistent/x.npz", max_entries=None, rtol=None, kind=None)),
}
DOCUMENTED = (ValueError, TypeError, FileNotFoundError, NotADirectoryError)
#: What the directory the suite started in held before this module ran (see ``_in_a_scratch_directory``).
_STARTED_IN: dict[str, object] = {}
SECONDS = 20                                    # per call: generous on a loaded machine; a hang is far longer


@pytest.fixture(autouse=True, scope="module")
def _in_a_scratch_directory(tmp_path_factory):
    """Fuzzed path-like values (``checkpoint="x"``, ``"3"``) are legal paths: the calls that take them write files
    relative to the working directory. The module runs in a scratch directory so they never land in the checkout
    (a verify checkpoint named ``x`` was once committed at the project's root this way)."""
    start = os.getcwd()
    _STARTED_IN.update(path=start, names=set(os.listdir(start)))
    os.chdir(tmp_path_factory.mktemp("fuzz_cwd"))
    try:
        yield
    finally:
        os.chdir(start)


class _Timeout(BaseException):
    pass


def _call(name, param, value):
    fn, kwargs = API[name]
    kwargs = dict(kwargs)
    kwargs[param] = value

    def alarm(signum, frame):
        raise _Timeout(f"{name}({param}={value!r}) ran for more than {SECONDS} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(**kwargs)
    except DOCUMENTED:
        pass
    except _Timeout as exc:
        pytest.fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - the point: any other exception type is a bug
        pytest.fail(f"{name}({param}={value!r}) raised {type(exc).__name__}: {exc}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_api_table_covers_the_parameters():
    import inspect

    deprecated = {"seed", "d", "tol"}   # aliases of rng, of random_regular_graph's degree and of recommend's rtol
    for name, (fn, kwargs) in API.items():
        params = inspect.signature(fn).parameters
        wanted = [p for p, v in params.items() if v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)
                  and not (p in deprecated and v.default is not inspect.Parameter.empty and p not in kwargs)]
        missing = [p for p in wanted if p not in kwargs]
        assert not missing, (name, missing)
    assert {n for n in gc.__all__ if callable(getattr(gc, n)) and not isinstance(getattr(gc, n), type)} - set(API) \
        <= {"schemes", "register", "save", "load"}     # deprecated aliases of save_code, load_code


@pytest.mark.parametrize("name", list(API))
def test_valid_arguments_run(name):
    fn, kwargs = API[name]
    if name in ("save_code", "load_code"):
        with pytest.raises((FileNotFoundError, NotADirectoryError, OSError)):
            fn(**kwargs)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(**kwargs)


CASES = [(name, param) for name, (_, kwargs) in API.items() for param in kwargs]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), value=st.sampled_from(BAD_VALUES))
def test_bad_values_raise_documented_errors(case, value):
    _call(*case, value)


def test_huge_update_count_is_refused_not_run():
    """simulate_training(updates=10**18) ran until killed; it is refused by the work bound now."""
    with pytest.raises(gc.SizeLimitError, match="updates"):
        gc.simulate_training(gc.FixedK(2), n=4, updates=10**18, rng=0)


def test_path_like_fuzz_values_write_into_the_scratch_directory():
    """The values above that are legal file names write there, not into the directory the suite started in."""
    _call("verify", "checkpoint", "x")
    assert os.path.exists("x") and os.getcwd() != _STARTED_IN["path"]
    assert set(os.listdir(_STARTED_IN["path"])) - _STARTED_IN["names"] <= {".pytest_cache", ".hypothesis"}
