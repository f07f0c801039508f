"""The longest main-thread task of the console while it shows a tool's result (the Long Tasks API), for
``tests/console/test_results.py`` and ``python -m bench.console_results``."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.console.conftest import WAIT_MS, Console

WATCH_LONG_TASKS = """
window.longTasks = [];
window.longFrames = [];
window.longTaskWatch = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.longTasks.push(entry.duration);
});
window.longTaskWatch.observe({ type: 'longtask' });
window.longFrameWatch = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.longFrames.push(entry.duration);
});
window.longFrameWatch.observe({ type: 'long-animation-frame' });
"""
"""Collects the duration (ms) of every main-thread task over 50 ms from now on (the Long Tasks API), and of
every frame over 50 ms (Long Animation Frames: its tasks and its style, layout and paint)."""
LONG_TASKS = """() => {
  for (const entry of window.longTaskWatch.takeRecords()) window.longTasks.push(entry.duration);
  return window.longTasks;
}"""
"""The task durations collected so far, those not yet delivered to the observer included."""
LONG_FRAMES = """() => {
  for (const entry of window.longFrameWatch.takeRecords()) window.longFrames.push(entry.duration);
  return window.longFrames;
}"""
"""The frame durations collected so far."""


def open_tool(console: Console, name: str) -> Page:
    page = console.open(f"#/tools/{name}")
    expect(page.locator(".panel h2")).to_have_text(name)
    return page


def longest_task_of_a_call(page: Page, arguments: dict[str, str]) -> float:
    """Fill the open tool's form, call it and wait for its result on screen; the longest task meanwhile (ms).

    ``page.evaluate(LONG_FRAMES)`` then gives the frames: a task's figure leaves out the style and
    layout work of the frame after it, which is where a page that puts megabytes of text on screen
    spends its time (before the cut, a 10 MB text: tasks under 300 ms, one frame of 27 s).
    """
    panel = page.locator(".panel")
    for name, value in arguments.items():
        panel.locator(f"[data-arg={name}] input").fill(value)
    page.evaluate(WATCH_LONG_TASKS)
    panel.get_by_role("button", name="Call").click()
    expect(panel.locator(".result")).to_be_visible(timeout=WAIT_MS * 4)
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 200)))")  # painted
    return max(page.evaluate(LONG_TASKS), default=0.0)
