"""
The broker benchmark's parts (``bench/broker/run.py`` is its command line), one concern each:

* :mod:`.settings`: paths, the brokers' settings and every JVM's options, the run's log;
* :mod:`.security`: TLS and ACL: both sides' settings, the signing/TLS Python producer, the
  check that ACL is enforced;
* :mod:`.peers`: the Java classpaths, starting a Java or rocketmq_tx name server + broker,
  the start-up probe (spawn to first acknowledged send), /proc readings of a process;
* :mod:`.tools`: the benchmark tool JVMs (Producer, Consumer, SendLatency), parsing what they
  print, our BlockingProducer's send loop, topic creation;
* :mod:`.phases`: the phases run against one started target, and one target's whole
  measurement (start, phases, stop, load average, clean-up);
* :mod:`.features`: issue #21's ``--transactions`` (TransactionProducer against Producer) and
  ``--sql92`` (a SQL92 consumer scanning a backlog) phases, tables and summaries;
* :mod:`.report`: the Markdown tables, the rounds' means and medians, the raw results file;
* :mod:`.summary`: the small JSON summary of a run (``bench/results/``), also built from an
  existing raw results file (``bench/broker/summarize.py``).

``bench`` is not a package: importing this one puts the repository, ``bench/`` and
``compat-tests/`` (the Java and twistd harnesses) on ``sys.path``.
"""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
for _path in (_ROOT, _ROOT / "bench", _ROOT / "compat-tests"):  # the last first on the path
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
