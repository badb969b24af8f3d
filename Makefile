# Two commands on a fresh Debian 12 machine:
#   make demo   install what is missing, build, run flowmut on the bundled default seed
#   make test   install what is missing, build, generate the seed zoo, run every test (CTest)
BUILD ?= build
JOBS  ?= 2
# One build per LibTorch: build/ against PyTorch 2.15 from the PyPI wheel in .venv (the default),
# build-1.13/ against Debian's LibTorch 1.13 (make test-1.13).
LIBTORCH ?= wheel
BUILD_113 ?= build-1.13
PYTHON = $(if $(filter system,$(LIBTORCH)),/usr/bin/python3,$(CURDIR)/.venv/bin/python)
export GLOG_minloglevel ?= 2

.PHONY: demo test test-1.13 deps build bench zoo zoo3p clean check-headers check-format

deps:
	@tools/setup-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DTFG_LIBTORCH=$(LIBTORCH)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs only the tool: do not compile the test suites and benchmarks for it. It
# profiles the bundled seed, then runs a short campaign on it with live status (round 0 judges
# the seed itself; findings are reduced to repro.py and issue.md within 60 s), prints the
# campaign's summary and writes build/demo/report.html; then a 5-round campaign on a generated
# seed with a known TorchScript defect (1.13 and 2.15), whose finding is reduced to repro.py and issue.md
# (build/demo-defect/report.html); then, on the PyTorch 2.x build, a 3-round campaign with the
# compiled configurations (torch.compile: Inductor and aot_eager) beside eager and float64.
demo: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target flowmut
	$(BUILD)/tools/flowmut --version
	$(BUILD)/tools/flowmut profile tests/data/tiny_mix.pt
	$(BUILD)/tools/flowmut run tests/data/tiny_mix.pt --rounds 20 --out $(BUILD)/demo --force --reduce-budget 60
	$(BUILD)/tools/flowmut summary $(BUILD)/demo | tail -n 25
	$(BUILD)/tools/flowmut report $(BUILD)/demo
	@echo "== a seed with a known TorchScript defect (docs/findings.md F2, on 1.13 and 2.15): found at round 0, reduced, reproduced"
	$(PYTHON) tests/data/make_repro_seeds.py $(BUILD)/demo-seeds
	$(BUILD)/tools/flowmut run $(BUILD)/demo-seeds/gelu_tanh_conv.pt --rounds 5 --out $(BUILD)/demo-defect --force -q \
	  --reduce-budget 60 --config eager_op_by_op --config frozen_optimized --config float64_reference
	$(BUILD)/tools/flowmut report $(BUILD)/demo-defect
ifneq ($(LIBTORCH),system)
	@echo "== compiled configurations (PyTorch 2.x): torch.compile with Inductor and aot_eager against eager and float64"
	$(BUILD)/tools/flowmut run tests/data/tiny_mix.pt --rounds 3 --out $(BUILD)/demo-compiled --force \
	  --config eager_op_by_op --config float64_reference --config aot_eager --config inductor
	$(BUILD)/tools/flowmut summary $(BUILD)/demo-compiled | head -n 8
endif

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The second build, against Debian's LibTorch 1.13: its core, campaign and LibTorch suites.
test-1.13: deps
	$(MAKE) --no-print-directory $(BUILD_113)/build.ninja BUILD=$(BUILD_113) LIBTORCH=system
	cmake --build $(BUILD_113) -j $(JOBS) --target tfg_core_tests tfg_campaign_tests tfg_fake_worker tfg_torch_tests
	cd $(BUILD_113) && ctest --output-on-failure -j 1 -R '^(core|campaign|torch)$$'

# Every public header compiles on its own (117 generated units; CI builds them after the tests).
check-headers: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target tfg_header_checks

# The house style: every C++ file of the project as clang-format (.clang-format) writes it.
check-format: deps
	git ls-files '*.hpp' '*.ipp' '*.cpp' | xargs clang-format --dry-run --Werror --style=file

zoo: deps
	$(PYTHON) examples/seeds/make_zoo.py $(BUILD)/zoo

# The third-party zoo: torchvision, timm and transformers models as .pt2 and .pt (LibTorch 2.x).
zoo3p: deps
	$(PYTHON) examples/seeds/make_zoo3p.py $(BUILD)/zoo3p

bench: build zoo
	$(BUILD)/bench/tfg_bench_profile --zoo=$(BUILD)/zoo --benchmark_min_time=1

clean:
	rm -rf $(BUILD) $(BUILD_113)
