"""@gradc.compile from several threads at once, in a fresh process (the first compilations load
the pass registry and the native worker pool): every thread gets its own function's results."""
import subprocess
import sys
import textwrap


def test_first_compilations_from_several_threads():
    code = textwrap.dedent("""
        import threading, numpy as np, gradc
        errors = []
        def work(k):
            try:
                f = gradc.compile(lambda x: (x * k + 1).exp().sum(1))
                a = np.random.default_rng(k).standard_normal((300, 1000)).astype(np.float32)
                for _ in range(5):
                    out = f(gradc.tensor(a)).numpy()
                    np.testing.assert_allclose(out, np.exp(a * k + 1).sum(1), rtol=1e-4)
            except BaseException as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert not errors, errors
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "GRADC_CACHE_DIR": "off"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
