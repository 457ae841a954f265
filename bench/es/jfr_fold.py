"""Folds a JFR recording into flame-graph lines, so that a profile of a node on the GPU machine comes back small.

    python3 jfr_fold.py JFR_TOOL RECORDING OUT

Each line of OUT: "<second> <kind> <thread> <root;...;leaf> <weight>", where kind is J (Java execution samples),
N (native method samples), P (thread parks), M (monitor enters) or W (monitor waits); samples weigh 1, waits their
duration in units of 0.1 ms. The second (HH:MM:SS) lets a reader cut out one phase of a benchmark. JFR's own
"jfr print" does the decoding: no library here parses recordings, and its text form is stable enough for this.
"""
import collections
import re
import subprocess
import sys

EVENTS = {'jdk.ExecutionSample': 'J', 'jdk.NativeMethodSample': 'N', 'jdk.ThreadPark': 'P',
          'jdk.JavaMonitorEnter': 'M', 'jdk.JavaMonitorWait': 'W'}


def duration_units(event):
    m = re.search(r'duration = ([\d.]+) (ns|us|ms|s)\b', event)
    if not m:
        return 1
    scale = {'ns': 1e-5, 'us': 1e-2, 'ms': 10, 's': 1e4}[m.group(2)]
    return max(1, round(float(m.group(1)) * scale))


def main(jfr, recording, out):
    text = subprocess.run([jfr, 'print', '--stack-depth', '96', '--events', ','.join(EVENTS), recording],
                          capture_output=True, text=True, check=True).stdout
    folded = collections.Counter()
    for event in re.split(r'\n(?=jdk\.)', text):
        name = event.split(' ', 1)[0].strip()
        kind = EVENTS.get(name)
        stack = re.search(r'stackTrace = \[(.*?)\n\s*\]', event, re.S)
        if kind is None or stack is None:
            continue
        start = re.search(r'startTime = (\d\d:\d\d:\d\d)', event)
        thread = re.search(r'(?:sampledThread|eventThread) = "([^"]*)"', event)
        frames = [re.sub(r'\(.*', '', line.strip()) for line in stack.group(1).strip().split('\n')]
        frames = ['.'.join(f.split('.')[-2:]) for f in frames if f and f != '...']
        name_of_thread = re.sub(r'\d+', '#', thread.group(1)).replace(' ', '_') if thread else '?'
        weight = 1 if kind in 'JN' else duration_units(event)
        key = f"{start.group(1) if start else '-'} {kind} {name_of_thread} {';'.join(reversed(frames))}"
        folded[key] += weight
    with open(out, 'w') as f:
        for key, weight in sorted(folded.items()):
            f.write(f'{key} {weight}\n')


if __name__ == '__main__':
    main(*sys.argv[1:4])
