"""The measured figures the app and the guides quote: ``python -m figures.demo_figures`` writes
``assets/demo_figures.json`` (read by the pages' "Expected on the demo") and the
``<!-- demo-figures:NAME -->`` blocks of ``docs/*.md``; ``python -m figures.gpu_report`` renders
the GPU block of ``docs/benchmarks.md`` from what ``python -m bench.gpu`` recorded. Speed
benchmarks, the GPU suite and experiments stay in ``bench/``."""
