"""The figure a bench script draws with --plot, checked where matplotlib is installed (run_bench.sh
installs it; CI's interpreter may not have it, and the figure is optional there)."""
import os
import subprocess
import sys


def check_plot(script, args, directory):
    """Runs `script *args --plot PNG` and checks that a PNG came out; says so when it cannot."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib not installed: --plot not tested")
        return
    png = os.path.join(directory, "plot.png")
    r = subprocess.run([sys.executable, script, *args, "--plot", png], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
