#!/usr/bin/python3
"""Opens a report.html in headless Chromium (Debian's `chromium`) and checks
that it renders: no console message (the page logs none; an error in its
script or a resource it failed to load shows as one), every plot present
and drawn at a non-zero size with at least the marks it was given (each
figure's data-marks: the points of its data; the page's own script counts
them into the body's data-plots-drawn and data-plots-drawn-names attributes,
read back from the DOM after the scripts ran), each plot NAME given present
and drawn (so a plot drawn empty is caught by name), and nothing loaded from
outside the file. Saves a screenshot (none when SCREENSHOT is -).

    browser_check.py REPORT.html SCREENSHOT.png MIN_PLOTS [NAME...]

Exits 0 when it renders, 1 when not (saying why), 77 when chromium is absent
(CTest's SKIP_RETURN_CODE).
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def chromium(profile, *args):
    command = [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
               "--no-first-run", "--disable-extensions", "--disable-background-networking",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90)


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if shutil.which("chromium") is None:
        print("browser_check: chromium is not installed: skipped")
        return SKIP
    report, screenshot, min_plots = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2], int(sys.argv[3])
    expected = sys.argv[4:]
    html = report.read_text()
    problems = []
    # Self-contained: nothing fetched from anywhere but the page itself.
    for pattern in (r"<link\b", r"<script[^>]*\bsrc=", r"<img[^>]*\bsrc=\"(?!data:)", r"@import",
                    r"url\((?!#)", r"https?://(?!www\.w3\.org/)"):
        if re.search(pattern, html):
            problems.append(f"the page refers to something outside itself ({pattern})")
    with tempfile.TemporaryDirectory() as profile:
        run = chromium(profile, "--dump-dom", report.as_uri())
        if run.returncode != 0:
            problems.append(f"chromium --dump-dom exited {run.returncode}: {run.stderr.strip()[-400:]}")
        console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
        problems += [f"console: {line.strip()}" for line in console]
        dom = run.stdout
        body = re.search(r"<body[^>]*>", dom)
        declared = re.search(r'data-plots="(\d+)"', body.group(0)) if body else None
        drawn = re.search(r'data-plots-drawn="(\d+)"', body.group(0)) if body else None
        names = re.search(r'data-plots-drawn-names="([^"]*)"', body.group(0)) if body else None
        drawn_names = names.group(1).split() if names else []
        for name in expected:
            marks = re.search(r'<figure data-plot="' + re.escape(name) + r'" data-marks="(\d+)"', dom)
            if not marks:
                problems.append(f"plot {name} is absent")
            elif name not in drawn_names:
                problems.append(f"plot {name} is empty: fewer marks drawn than its {marks.group(1)} points")
        if not declared or not drawn:
            problems.append("the page's script did not run (no data-plots-drawn on <body>)")
        else:
            n, m = int(declared.group(1)), int(drawn.group(1))
            figures = len(re.findall(r"<figure[^>]*>\s*<svg", dom))
            if n < min_plots:
                problems.append(f"{n} plots, expected at least {min_plots}")
            if figures != n:
                problems.append(f"the page declares {n} plots and holds {figures}")
            if m != n:
                problems.append(f"{m} of {n} plots drawn with a non-zero size and marks")
        if screenshot != "-":
            shot = chromium(profile, f"--screenshot={screenshot}", "--window-size=1280,1800",
                            "--hide-scrollbars", report.as_uri())
            if shot.returncode != 0 or not pathlib.Path(screenshot).is_file():
                problems.append(f"no screenshot: {shot.stderr.strip()[-400:]}")
    for p in problems:
        print(f"browser_check: {report}: {p}")
    if not problems:
        print(f"browser_check: {report}: {n} plots drawn ({' '.join(expected) or 'none named'} "
              f"among them), no console message; screenshot {screenshot}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
