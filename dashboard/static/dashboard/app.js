// HomeHub dashboard: progressive enhancement of the server-rendered pages.
// - forms post with fetch (JSON answers) so switches react without a reload;
// - /ws/home/ pushes every change made anywhere; the page applies it at once and
//   refreshes its [data-refresh] regions; a banner shows while the socket is down;
// - an invoice batch runs on the server: its panel is polled (any hub process can answer,
//   whatever the channel layer) until the batch ends, also after a reload.
(function () {
  "use strict";

  function csrf(form) {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function post(form, extra) {
    var data = new FormData(form);
    if (extra) Object.keys(extra).forEach(function (k) { data.set(k, extra[k]); });
    return fetch(form.action, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { "Accept": "application/json", "X-CSRFToken": csrf(form) },
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) {
          var failure = new Error(body.error || body.detail || ("Request failed (" + r.status + ")"));
          failure.body = body;
          throw failure;
        }
        return body;
      });
    });
  }

  // --- applying state -------------------------------------------------------------------
  function setLight(name, on) {
    document.querySelectorAll('[data-light="' + CSS.escape(name) + '"]').forEach(function (btn) {
      btn.setAttribute("aria-checked", on ? "true" : "false");
      var state = btn.querySelector(".switch-state");
      if (state) state.textContent = on ? (state.dataset.on || "On") : (state.dataset.off || "Off");  // the page's language
      var form = btn.closest("form");
      if (form) form.querySelector("input[name=on]").value = on ? "0" : "1";
    });
  }

  function setAlarm(armed) {
    var box = document.querySelector("[data-alarm]");
    if (!box) return;
    box.dataset.alarm = armed ? "armed" : "disarmed";
    box.classList.toggle("is-armed", armed);
    box.classList.toggle("is-disarmed", !armed);
    var text = document.getElementById("alarm-text"), help = document.getElementById("alarm-help");  // the page's language
    text.textContent = armed ? (text.dataset.armed || "Armed") : (text.dataset.disarmed || "Disarmed");
    help.textContent = armed ? (help.dataset.armed || "The house is protected.") : (help.dataset.disarmed || "The alarm is off.");
    var arm = document.getElementById("arm-btn"), disarm = document.getElementById("disarm-btn");
    if (arm) arm.disabled = armed;  // the buttons are there only for roles that may arm
    if (disarm) disarm.disabled = !armed;
  }

  function setPerson(name, present) {
    var row = document.querySelector('[data-person="' + CSS.escape(name) + '"]');
    if (!row) return;
    row.classList.toggle("is-home", present);
    var state = row.querySelector(".person-state");  // the page's language
    state.textContent = present ? (state.dataset.home || "Home") : (state.dataset.away || "Away");
    var input = row.querySelector("input[name=present]");  // the form: roles that may mark presence
    if (input) {
      input.value = present ? "0" : "1";
      var button = row.querySelector("button");
      button.firstChild.textContent = present ? (button.dataset.markAway || "Mark away") : (button.dataset.markHome || "Mark home");
    }
    var count = document.getElementById("home-count");
    if (count) count.textContent = document.querySelectorAll(".person.is-home").length;
  }

  // Re-render the page's live regions (and switch states) from a fresh copy of the page.
  var refreshTimer = null;
  function refreshSoon(delay) {
    if (refreshTimer) return;
    refreshTimer = setTimeout(function () {
      refreshTimer = null;
      fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          document.querySelectorAll("[data-refresh], #requests-banner, #requests-count, #notifications-banner").forEach(function (el) {
            if (!el.id || el.contains(document.activeElement) && document.activeElement !== document.body) return;
            var fresh = doc.getElementById(el.id);
            if (!fresh) return;
            keepToolState(el, fresh);
            el.replaceWith(fresh);
          });
          doc.querySelectorAll("[data-light]").forEach(function (b) {
            setLight(b.dataset.light, b.getAttribute("aria-checked") === "true");
          });
          var alarm = doc.querySelector("[data-alarm]");
          if (alarm) setAlarm(alarm.dataset.alarm === "armed");
          doc.querySelectorAll("[data-person]").forEach(function (p) {
            setPerson(p.dataset.person, p.classList.contains("is-home"));
          });
        })
        .catch(function () { /* the next event or reconnect tries again */ });
    }, delay || 250);
  }

  function applyEvent(ev) {
    if (ev.kind === "light" && ev.name) setLight(ev.name, !!ev.on);
    else if (ev.kind === "alarm") setAlarm(!!ev.armed);
    else if (ev.kind === "person" && ev.name) setPerson(ev.name, !!ev.present);
    if (document.querySelector("[data-refresh]") || ev.kind === "home") refreshSoon();
  }

  // --- the live socket ------------------------------------------------------------------
  var retry = 0, everOpen = false;
  function banner(show) {
    var b = document.getElementById("live-banner");
    if (b) b.hidden = !show;
    var dot = document.getElementById("live-dot");
    if (dot) dot.classList.toggle("on", !show);
    document.body.dataset.socket = show ? "down" : "up";
  }
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws;
    try { ws = new WebSocket(scheme + location.host + "/ws/home/"); } catch (e) { return schedule(); }
    ws.onopen = function () {
      retry = 0;
      banner(false);
      if (everOpen) refreshSoon(0);  // catch up on what happened while we were away
      everOpen = true;
    };
    ws.onmessage = function (msg) {
      var data;
      try { data = JSON.parse(msg.data); } catch (e) { return; }
      if (data.type === "event" && data.event) applyEvent(data.event);
      else if (data.type === "requests") refreshSoon(0);  // a request came, was decided or lapsed
      else if (data.type === "notifications") refreshSoon(0);  // one came or was dismissed
    };
    ws.onclose = function () { banner(true); schedule(); };
    window.homehubSocket = ws;
  }
  function schedule() {
    retry = Math.min(retry + 1, 6);
    setTimeout(connect, Math.min(500 * Math.pow(2, retry - 1), 10000));
  }

  // --- forms ----------------------------------------------------------------------------
  // The automation editor: of a kind's field groups ([data-kind-group] with [data-kind]), only
  // the selected kind's shows (without script, all show and the server reads the selected one).
  function kindSelects() {
    document.querySelectorAll("[data-kind-select]").forEach(function (select) {
      function show() {
        document.querySelectorAll('[data-kind-group="' + CSS.escape(select.dataset.kindSelect) + '"]').forEach(function (group) {
          group.hidden = group.dataset.kind !== select.value;
        });
      }
      select.addEventListener("change", show);
      show();
    });
  }

  function enhance() {
    kindSelects();
    document.querySelectorAll("[data-light-form]").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        var btn = form.querySelector(".switch");
        btn.classList.add("busy");
        post(form).then(function (body) { setLight(body.name, body.on); })
          .catch(function (err) { alert(err.message); })
          .finally(function () { btn.classList.remove("busy"); });
      });
    });

    document.querySelectorAll("[data-person-form]").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        post(form).then(function (body) { setPerson(body.name, body.present); })
          .catch(function (err) { alert(err.message); });
      });
    });

    var dialog = document.getElementById("disarm-dialog");
    var armForm = document.querySelector('[data-alarm-form="arm"]');
    var disarmForm = document.querySelector('[data-alarm-form="disarm"]');
    if (armForm) armForm.addEventListener("submit", function (e) {
      e.preventDefault();
      post(armForm).then(function (body) { setAlarm(body.armed); }).catch(function (err) { alert(err.message); });
    });
    if (disarmForm && dialog && dialog.showModal) {
      disarmForm.addEventListener("submit", function (e) {
        e.preventDefault();
        dialog.showModal();
        document.getElementById("disarm-confirm").focus();
      });
      dialog.querySelector("[data-close]").addEventListener("click", function () { dialog.close(); });
      dialog.querySelector("form").addEventListener("submit", function (e) {
        e.preventDefault();
        post(dialog.querySelector("form")).then(function (body) {
          setAlarm(body.armed);
          dialog.close();
          document.getElementById("arm-btn").focus();
        }).catch(function (err) { alert(err.message); });
      });
    }

    var upload = document.getElementById("upload-form");
    if (upload) upload.addEventListener("submit", function (e) {
      var input = document.getElementById("files");
      if (!input.files.length || !window.XMLHttpRequest) return;
      e.preventDefault();
      uploadBatch(upload, input);
    });
    document.querySelectorAll("[data-batch]").forEach(watchBatch);
  }

  // --- device tools ---------------------------------------------------------------------
  // The Devices page's tool forms, by delegation on the document: a live update replaces
  // their region ([data-refresh]), and they keep working. The outcome (HTML the hub renders)
  // goes to the form's <output>, looked up by id when it comes, in case a refresh replaced it.
  function runTool(e) {
    var form = e.target.closest && e.target.closest("[data-tool-form]");
    if (!form) return;
    e.preventDefault();
    var outId = form.querySelector(".tool-output").id;
    function show(html, text) {
      var out = document.getElementById(outId);
      if (!out) return;
      if (html) out.innerHTML = html; else out.textContent = text;
    }
    show(null, form.dataset.calling || "Calling…");  // the page's language, from the form
    post(form).then(function (body) { show(body.html, form.dataset.done || "Done."); })
      .catch(function (err) { show(err.body && err.body.html, err.message); });
  }

  // Before a refresh replaces a region: the fresh copy keeps which tools were open, their
  // outcomes and what was typed in their fields.
  function keepToolState(old, fresh) {
    old.querySelectorAll("details[id]").forEach(function (d) {
      var twin = fresh.querySelector("#" + CSS.escape(d.id));
      if (twin) twin.open = d.open;
    });
    old.querySelectorAll(".tool-output[id]").forEach(function (out) {
      var twin = fresh.querySelector("#" + CSS.escape(out.id));
      if (twin) twin.replaceChildren.apply(twin, Array.from(out.childNodes));
    });
    old.querySelectorAll("[data-tool-form] [name^='arg-']").forEach(function (field) {
      var twin = field.id && fresh.querySelector("#" + CSS.escape(field.id));
      if (!twin) return;
      if (field.type === "checkbox") twin.checked = field.checked; else twin.value = field.value;
    });
  }

  // --- invoice batches ------------------------------------------------------------------
  // One request carries every file (its upload progress in #upload-bar); the hub answers
  // with the batch it started, whose panel is then polled until the batch ends.
  function uploadBatch(form, input) {
    var wrap = document.getElementById("upload-progress");
    var bar = document.getElementById("upload-bar");
    var label = document.getElementById("upload-label");
    var button = form.querySelector("button[type=submit]");
    var count = input.files.length;
    var xhr = new XMLHttpRequest();
    wrap.hidden = false;
    bar.max = 1;
    bar.value = 0;
    // The page's language: the label carries its words (data-one, data-many, data-failed...).
    label.textContent = count === 1 ? (label.dataset.one || "Uploading 1 file…")
      : (label.dataset.many || "Uploading {n} files…").replace("{n}", count);
    button.disabled = true;
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", csrf(form));
    xhr.upload.onprogress = function (ev) {
      if (ev.lengthComputable) bar.value = ev.loaded / ev.total;
    };
    xhr.onload = function () {
      var body = {};
      try { body = JSON.parse(xhr.responseText); } catch (err) { /* not JSON */ }
      button.disabled = false;
      if (xhr.status !== 202) {
        label.textContent = body.error || body.detail
          || (label.dataset.failed || "The upload failed ({status}).").replace("{status}", xhr.status);
        return;
      }
      wrap.hidden = true;
      input.value = "";
      showBatch(body.panel);
    };
    xhr.onerror = function () {
      button.disabled = false;
      label.textContent = label.dataset.offline || "The upload failed: check the connection and try again.";
    };
    xhr.send(new FormData(form));
  }

  function fetchPanel(url) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var panel = new DOMParser().parseFromString(html, "text/html").querySelector("[data-batch]");
        return panel || Promise.reject("no panel");
      });
  }

  function showBatch(url) {
    var slot = document.getElementById("last-batch");
    fetchPanel(url).then(function (panel) {
      var old = slot.querySelector("[data-batch]");
      if (old) old.dataset.gone = "1";  // its poll stops; the list of earlier batches shows it
      slot.innerHTML = "";
      slot.appendChild(document.adoptNode(panel));
      watchBatch(panel);
      refreshSoon(0);
    }).catch(function () { setTimeout(function () { showBatch(url); }, 1000); });
  }

  function running(state) { return state === "queued" || state === "running"; }

  // Update the panel in place: the bar and the status line keep their nodes (the status
  // line is a live region), the badge and the per-file list are replaced.
  function updatePanel(panel, fresh) {
    panel.dataset.state = fresh.dataset.state;
    var bar = panel.querySelector("progress"), freshBar = fresh.querySelector("progress");
    bar.max = freshBar.max;
    bar.value = freshBar.value;
    var status = panel.querySelector(".batch-status"), text = fresh.querySelector(".batch-status").textContent;
    if (status.textContent !== text) status.textContent = text;
    var folded = panel.querySelector(".valid-files"), unfolded = fresh.querySelector(".valid-files");
    if (folded && unfolded) unfolded.open = folded.open;  // keep what the reader opened
    ["h3", ".batch-badge", ".batch-body"].forEach(function (sel) {
      panel.querySelector(sel).replaceWith(document.adoptNode(fresh.querySelector(sel)));
    });
  }

  function watchBatch(panel) {
    if (panel.dataset.watching || !running(panel.dataset.state)) return;
    panel.dataset.watching = "1";
    function tick() {
      if (panel.dataset.gone) return;
      fetchPanel(panel.dataset.url).then(function (fresh) {
        updatePanel(panel, fresh);
        if (running(fresh.dataset.state)) setTimeout(tick, 600);
        else refreshSoon(0);  // the recorded invoices and earlier batches
      }).catch(function () { setTimeout(tick, 2000); });
    }
    setTimeout(tick, 300);
  }

  // A chart's value under the pointer (or finger): the nearest point of its data-points.
  document.addEventListener("pointermove", function (ev) {
    var svg = ev.target.closest && ev.target.closest("svg[data-points]");
    document.querySelectorAll("svg[data-points] .hover").forEach(function (g) { if (!svg || !svg.contains(g)) g.setAttribute("hidden", ""); });
    if (!svg) return;
    var at = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(svg.getScreenCTM().inverse());
    var best = null, gap = Infinity;
    svg.dataset.points.split(";").forEach(function (p) {
      var f = p.split(","), d = Math.abs(+f[0] - at.x);
      if (d < gap) { gap = d; best = f; }
    });
    var g = svg.querySelector(".hover"), x = +best[0], y = +best[1], box = svg.viewBox.baseVal;
    var line = g.querySelector("line"), dot = g.querySelector("circle"), text = g.querySelector("text"), rect = g.querySelector("rect");
    line.setAttribute("x1", x); line.setAttribute("x2", x); line.setAttribute("y1", 28); line.setAttribute("y2", box.height - 36);
    dot.setAttribute("cx", x); dot.setAttribute("cy", y);
    text.textContent = best.slice(2).join(",");
    g.removeAttribute("hidden");
    var w = text.getComputedTextLength() + 16, left = Math.min(Math.max(x - w / 2, 0), box.width - w);
    text.setAttribute("x", left + 8); text.setAttribute("y", 20);
    rect.setAttribute("x", left); rect.setAttribute("y", 4); rect.setAttribute("width", w); rect.setAttribute("height", 22);
  });

  document.addEventListener("submit", runTool);
  document.addEventListener("DOMContentLoaded", function () {
    enhance();
    if (document.body.dataset.live) connect();
  });
})();
