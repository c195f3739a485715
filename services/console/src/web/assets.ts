/**
 * The page's one stylesheet and one script, served from this origin (the CSP allows nothing inline and
 * nothing from elsewhere). Kept as text here so the production bundle carries them with no files to copy.
 * The page works without the script; it only adds the copy buttons.
 */
export const consoleStyles = `
:root { color-scheme: light; --ink: #1a1a1a; --muted: #4a4a4a; --line: #c8c8c8; --accent: #0b4fa8; --danger: #a3161a; --ok: #145c2a; --bg: #ffffff; --soft: #f3f5f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header.top { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: center; padding: .75rem 1rem; border-bottom: 1px solid var(--line); background: var(--soft); }
header.top .who { display: flex; flex-direction: column; }
header.top .merchant { font-family: ui-monospace, monospace; font-size: .9rem; }
header.top .user { color: var(--muted); font-size: .9rem; }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0; padding: 0; }
nav a { color: var(--accent); text-decoration: none; padding: .25rem 0; border-bottom: 3px solid transparent; }
nav a[aria-current="page"] { border-bottom-color: var(--accent); font-weight: 600; }
.sign-out { margin-left: auto; }
main { padding: 1rem; max-width: 72rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible { outline: 3px solid #f5a700; outline-offset: 2px; }
form.card, section.card { border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin: 0 0 1rem; background: var(--bg); }
label { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0; }
fieldset label { display: inline-flex; gap: .35rem; font-weight: 400; margin: .15rem 1rem .15rem 0; }
legend { font-weight: 600; }
.hint { color: var(--muted); font-size: .9rem; margin: .15rem 0; }
input[type="text"], input[type="url"], input[type="datetime-local"], select, textarea { font: inherit; padding: .45rem .55rem; border: 1px solid #767676; border-radius: 4px; width: 100%; max-width: 32rem; }
button { font: inherit; padding: .45rem .9rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; margin-top: .5rem; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: flex-end; }
.actions form { margin: 0; }
.notice { padding: .6rem .8rem; border-radius: 4px; border: 1px solid; }
.notice.ok { color: var(--ok); border-color: var(--ok); background: #eef8f1; }
.notice.error { color: var(--danger); border-color: var(--danger); background: #fbeeee; }
.field-error { color: var(--danger); font-weight: 600; }
.secret { border: 2px solid var(--danger); border-radius: 6px; padding: 1rem; background: #fff8f0; }
.secret input { font-family: ui-monospace, monospace; max-width: 100%; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
th, td { text-align: left; padding: .45rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--soft); }
code, .mono { font-family: ui-monospace, monospace; font-size: .9rem; word-break: break-all; }
.status-succeeded, .status-active, .status-enabled { color: var(--ok); font-weight: 600; }
.status-failed, .status-revoked, .status-disabled, .status-expired, .status-cancelled { color: var(--danger); font-weight: 600; }
.pager { display: flex; gap: 1rem; margin: .75rem 0; }
pre.excerpt { white-space: pre-wrap; word-break: break-all; max-height: 8rem; overflow: auto; background: var(--soft); padding: .4rem; margin: 0; font-size: .85rem; }
.filter-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: 0 1rem; }
.filter-grid input, .filter-grid select { max-width: 100%; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
figure { margin: 0; }
figcaption { color: var(--muted); font-size: .9rem; }
svg.chart { width: 100%; height: auto; display: block; }
.chart-axis { stroke: #767676; stroke-width: 1; }
.chart-label { fill: var(--muted); font-size: 10px; font-family: system-ui, sans-serif; }
.chart-ok { fill: var(--ok); }
.chart-failed { fill: var(--danger); }
.chart-line { fill: none; stroke-width: 2; }
.chart-p50 { stroke: var(--accent); fill: var(--accent); }
.chart-p95 { stroke: #8a4b00; fill: #8a4b00; }
path.chart-p50, path.chart-p95 { fill: none; }
.key { display: inline-block; width: .8rem; height: .8rem; vertical-align: -.1rem; margin-left: .4rem; border-radius: 2px; }
.key-ok { background: var(--ok); }
.key-failed { background: var(--danger); }
.key-p50 { background: var(--accent); }
.key-p95 { background: #8a4b00; }
details summary { cursor: pointer; color: var(--accent); margin: .5rem 0; }
[hidden] { display: none !important; }
@media (max-width: 40rem) {
  .sign-out { margin-left: 0; }
  th, td { padding: .35rem .3rem; }
}
`;

export const consoleScript = `"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-copy") + "-copied");
    if (!target || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.value).then(function () {
        if (status) status.textContent = "Copied to the clipboard.";
      }, function () {
        target.select();
        if (status) status.textContent = "Select the value and copy it by hand.";
      });
    });
  });
  document.querySelectorAll("input[data-select-on-focus]").forEach(function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });
});
`;
