"""axe-core, the accessibility checker, injected into a page by Playwright.

The npm package is pinned in tests/browser_deps/package.json (and its lock file); ``npm ci`` in
that folder puts it in node_modules. Without it a test that needs it skips with that command,
except in CI (``CI`` set), where it fails: ``.ci/run`` installs it (tests/parts.py's rule;
``HH_TEST_HIDE=axe`` hides it).
"""

from __future__ import annotations

from pathlib import Path

from parts import need

__all__ = ["AXE_JS", "axe_missing", "need_axe", "serious_violations"]

DEPS = Path(__file__).resolve().parent / "browser_deps"
AXE_JS = DEPS / "node_modules" / "axe-core" / "axe.min.js"


def axe_missing() -> str | None:
    """Why axe-core cannot be injected here, or None when it can."""
    if not AXE_JS.exists():
        return f"axe-core is not installed at {AXE_JS} (cd {DEPS} && npm ci)"
    return None


def need_axe() -> Path:
    """The path of axe.min.js; skips the test where it is missing, fails it in CI."""
    need("axe")
    return AXE_JS


def serious_violations(page) -> list[str]:
    """axe's serious and critical violations on the page as it is now, one line per element
    (rule, impact, the element's selector and axe's summary); [] when there is none."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(need_axe()))
    result = page.evaluate(
        """async () => {
          const r = await window.axe.run(document, {resultTypes: ['violations']});
          return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .flatMap(v => v.nodes.map(n =>
              v.id + ' (' + v.impact + ') ' + n.target.join(' ') + ': ' + n.failureSummary));
        }"""
    )
    return list(result)
