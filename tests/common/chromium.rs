//! A real Chromium for the HTML report: where it is, a headless command, and where the report's
//! parts land on a screen of a given size.

use std::path::Path;

/// Chromium, if this machine has it (`.ci/run` installs Debian's `chromium`).
pub fn chromium() -> Option<&'static str> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
}

pub fn headless(bin: &str, profile: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Where `html`'s answer and figures end (px from the top) when Chromium lays it out `width`
/// wide: the answer block's bottom, and each figure's caption start with its bottom, in order.
pub fn layout(bin: &str, html: &Path, width: u32) -> (Option<f64>, Vec<(String, f64)>) {
    let dir = html.parent().unwrap();
    let wrap = dir.join("measure.html");
    let name = html.file_name().unwrap().to_string_lossy();
    std::fs::write(
        &wrap,
        format!(
            r#"<!doctype html><html><body style="margin:0">
<iframe id="f" src="{name}" style="width:{width}px;height:900px;border:0"></iframe>
<script>
document.getElementById('f').onload = function () {{
  var d = this.contentDocument;
  var out = {{answer: null, figures: []}};
  var a = d.querySelector('pre.answer');
  if (a) out.answer = a.getBoundingClientRect().bottom;
  d.querySelectorAll('figure').forEach(function (f) {{
    var c = f.querySelector('figcaption');
    out.figures.push([c ? c.textContent.slice(0, 80) : '', f.getBoundingClientRect().bottom]);
  }});
  var p = document.createElement('pre');
  p.id = 'measured';
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
}};
</script></body></html>"#
        ),
    )
    .unwrap();
    let out = headless(bin, &dir.join("measure-profile"))
        .args([
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            &format!("--window-size={width},900"),
            "--dump-dom",
        ])
        .arg(format!("file://{}", wrap.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"measured\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("nothing measured: {}", String::from_utf8_lossy(&out.stderr)))
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let figures = v["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f[0].as_str().unwrap().to_string(), f[1].as_f64().unwrap()))
        .collect();
    (v["answer"].as_f64(), figures)
}
