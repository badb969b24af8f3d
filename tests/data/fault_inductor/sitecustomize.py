"""TEST ONLY. With this folder on PYTHONPATH and TFG_TEST_FAULT_INDUCTOR set, every Python
process (a finding's repro.py, torch's compiler bisector and the runs it starts) gets the
compiled worker's test-only wrong Inductor decomposition (tfg_compiled_worker.install_test_fault):
how tests/cli/compiled.sh checks flowmut's Inductor triage on a defect it knows the place of.
Without TFG_TEST_FAULT_INDUCTOR it does nothing."""
import os
import sys

if os.environ.get("TFG_TEST_FAULT_INDUCTOR"):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "..", "backends", "torch", "python"))
    import tfg_compiled_worker  # noqa: E402

    tfg_compiled_worker.install_test_fault()
