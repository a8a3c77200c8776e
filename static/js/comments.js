/* Comments, progressively enhanced. Without this script every form does a full round trip
   and everything works; with it, like/unlike, reply, edit and delete happen in place (the
   server answers `X-Requested-With: fetch` with the re-rendered comment as HTML, or a JSON
   error that is shown beside the kept text), an editor's "Moderate" menu too (answered with
   JSON: the server's message and the re-rendered comment), textareas count characters, and
   threads collapse. */
(function () {
  "use strict";

  function updateCounter(textarea) {
    var out = document.getElementById(textarea.dataset.counter);
    if (!out) return;
    var max = parseInt(textarea.getAttribute("maxlength") || "0", 10);
    var n = textarea.value.length;
    out.textContent = n + " / " + max;
    out.classList.toggle("near", max > 0 && n >= max * 0.9 && n <= max);
    out.classList.toggle("over", max > 0 && n > max);
  }

  function depthOf(el) { return parseInt(el.dataset.depth || "0", 10); }

  function descendants(article) {
    var out = [], depth = depthOf(article), next = article.nextElementSibling;
    while (next && next.matches("article.comment") && depthOf(next) > depth) { out.push(next); next = next.nextElementSibling; }
    return out;
  }

  function setupCollapse(root) {
    (root || document).querySelectorAll(".comment-list.threaded article.comment").forEach(function (article) {
      var button = article.querySelector(":scope > header .collapse");
      if (!button) return;
      var kids = descendants(article);
      button.hidden = kids.length === 0;
      if (kids.length) labelCollapse(button, kids.length);
    });
  }

  function toggle(button) {
    var article = button.closest("article.comment");
    var open = button.getAttribute("aria-expanded") !== "false";
    var kids = descendants(article);
    kids.forEach(function (kid) { kid.hidden = open; });
    button.setAttribute("aria-expanded", open ? "false" : "true");
    labelCollapse(button, kids.length);
  }

  /* The button's text, beside its icon (the button keeps its <svg>: only the label changes). */
  function labelCollapse(button, count) {
    var label = button.querySelector(".label") || button;
    label.textContent = button.getAttribute("aria-expanded") === "false" ? "Expand (" + count + ")" : "Collapse";
  }

  function showError(form, message) {
    var old = form.querySelector(".field-error.js");
    if (old) old.remove();
    var p = document.createElement("p");
    p.className = "field-error js";
    p.setAttribute("role", "alert");
    p.textContent = message;
    var field = form.querySelector(".field") || form;
    field.classList.add("has-error");
    field.appendChild(p);
    var textarea = form.querySelector("textarea");
    if (textarea) textarea.setAttribute("aria-invalid", "true");
  }

  function fragment(html) {
    var t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function place(newer, older, depth) {
    newer.dataset.depth = String(depth);
    newer.className = newer.className.replace(/\bd\d\b/, "d" + Math.min(depth, 8));
    if (!older.closest(".comment-list.threaded")) newer.className = newer.className.replace(/\bd\d\b/, "d0");
  }

  function note(article, message) {
    var old = article.querySelector(":scope > .actions > .moderation-note");
    if (old) old.remove();
    var p = document.createElement("p");
    p.className = "moderation-note";
    p.setAttribute("role", "status");
    p.textContent = message;
    (article.querySelector(":scope > .actions") || article).appendChild(p);
  }

  /* A report's answer: JSON {created, detail}, or {detail, code} when refused (429: with
     `retry_after`, and the button waits that long). The message goes beside the comment. */
  function reported(form, article, response) {
    if (response.status === 401) { form.submit(); return Promise.resolve(0); } /* log in: the full page flow */
    return response.json().then(function (body) {
      if (!response.ok) {
        showError(form, body.detail || "That did not work (" + response.status + ").");
        return response.status === 429 && body.retry_after > 0 ? Math.min(body.retry_after, 3600) * 1000 : 0;
      }
      var details = form.closest("details");
      if (details) {
        details.open = false;
        var summary = details.querySelector("summary");
        if (summary && summary.focus) summary.focus({preventScroll: true});
      }
      note(article, body.detail);
      return 0;
    }, function () { showError(form, "That did not work (" + response.status + ")."); return 0; });
  }

  /* The moderation menu's answer: JSON {changed, detail, html?}, or {detail, code} when refused. */
  function moderated(form, article, response) {
    if (response.status === 401) { form.submit(); return; } /* log in: the full page flow */
    return response.json().then(function (body) {
      if (!response.ok) { showError(form, body.detail || "That did not work (" + response.status + ")."); return; }
      var target = article;
      if (body.html) {
        target = fragment(body.html);
        place(target, article, depthOf(article));
        article.replaceWith(target);
        target.classList.add("flash");
        setupCollapse();
      } else {
        var details = form.closest("details");
        if (details) details.open = false;
      }
      note(target, body.detail);
      var summary = target.querySelector("details.moderate summary");
      if (summary && summary.focus) summary.focus({preventScroll: true});
    }, function () { showError(form, "That did not work (" + response.status + ")."); });
  }

  document.addEventListener("input", function (e) {
    if (e.target.matches && e.target.matches("textarea[data-counter]")) updateCounter(e.target);
  });

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button.collapse");
    if (button) { e.preventDefault(); toggle(button); }
  });

  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.matches("form[data-in-place]") || !window.fetch) return;
    if (e.submitter && e.submitter.name === "preview") return; /* the preview is a page of its own */
    e.preventDefault();
    var article = form.closest("article.comment");
    var kind = form.dataset.inPlace;
    var buttons = form.querySelectorAll("button"), wait = 0;
    buttons.forEach(function (b) { b.disabled = true; });
    /* getAttribute: the like form has an input named "action", which shadows form.action */
    fetch(form.getAttribute("action"), {method: "POST", body: new FormData(form), credentials: "same-origin",
                        headers: {"X-Requested-With": "fetch"}})
      .then(function (response) {
        if (kind === "moderate") return moderated(form, article, response);
        if (kind === "flag") return reported(form, article, response).then(function (ms) { wait = ms || 0; });
        var type = response.headers.get("Content-Type") || "";
        if (response.ok && type.indexOf("text/html") === 0) {
          return response.text().then(function (html) {
            var el = fragment(html);
            if (kind === "reply") {
              var kids = descendants(article);
              var after = kids.length ? kids[kids.length - 1] : article;
              place(el, article, depthOf(article) + 1);
              after.after(el);
              form.reset();
              form.querySelectorAll("textarea[data-counter]").forEach(updateCounter);
              var details = form.closest("details");
              if (details) details.open = false;
            } else {
              place(el, article, depthOf(article));
              article.replaceWith(el);
            }
            el.classList.add("flash");
            setupCollapse();
            /* Focus never falls back to <body>: a like stays on its button; a reply goes to the new
               reply, an edit to the edited comment, a delete to the tombstone in its place (as the
               "new comments" notice does, the comment itself, focusable by script only). */
            var focus = kind === "like" ? el.querySelector("form.like button") : el;
            if (focus === el) el.setAttribute("tabindex", "-1");
            if (focus && focus.focus) focus.focus({preventScroll: kind !== "reply"});
          });
        }
        if (response.status === 401) { form.submit(); return; } /* log in: the full page flow */
        return response.json().then(function (body) {
          showError(form, body.detail || "That did not work.");
          /* 429: the server's message says how long; the buttons wait that long too */
          if (response.status === 429 && body.retry_after > 0) wait = Math.min(body.retry_after, 3600) * 1000;
        }, function () { showError(form, "That did not work (" + response.status + ")."); });
      })
      .catch(function () { showError(form, "The network failed; your text is still here. Try again."); })
      .finally(function () {
        setTimeout(function () { buttons.forEach(function (b) { b.disabled = false; }); }, wait);
      });
  });

  /* "N new comments": poll the page's cheap endpoint (comments after the count the page was
     shown with), say how many arrived, and show them on demand without a reload. */
  function setupNewComments() {
    var box = document.querySelector(".new-comments[data-new-url]");
    if (!box || !window.fetch) return;
    var notice = box.querySelector(".new-notice"), button = notice.querySelector("button");
    var list = box.querySelector(".new-list"), waiting = [], delay = 1000 * (parseInt(box.dataset.interval, 10) || 30);
    function fresh(ids) { return ids.filter(function (id) { return !document.getElementById("c-" + id); }); }
    function poll() {
      if (document.hidden) { setTimeout(poll, delay); return; }
      fetch(box.dataset.newUrl + "?after=" + encodeURIComponent(box.dataset.after),
            {credentials: "same-origin", headers: {"X-Requested-With": "fetch"}})
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (body && body.count) {
            box.dataset.after = body.last;
            var doc = fragment("<div>" + body.html + "</div>");
            Array.prototype.slice.call(doc.children).forEach(function (el) {
              if (fresh([el.dataset.id]).length) waiting.push(el);
            });
          }
          if (waiting.length) {
            button.textContent = waiting.length + (waiting.length === 1 ? " new comment" : " new comments") +
              (body && body.more ? " (and more: reload)" : "") + ": show";
            notice.hidden = false;
          }
        })
        .catch(function () {})
        .finally(function () { setTimeout(poll, delay); });
    }
    button.addEventListener("click", function () {
      waiting.forEach(function (el) { if (!document.getElementById(el.id)) { list.appendChild(el); el.classList.add("flash"); } });
      waiting = [];
      list.hidden = false;
      notice.hidden = true;
      /* The heading counts the discussion as the server last answered (its `last` is the total). */
      var title = document.getElementById("comments-title"), total = parseInt(box.dataset.after, 10);
      if (title && total > 0) title.textContent = total + (total === 1 ? " comment" : " comments");
      var newest = list.lastElementChild;
      if (newest && newest.focus) { newest.setAttribute("tabindex", "-1"); newest.focus({preventScroll: false}); }
    });
    setTimeout(poll, delay);
  }

  function init() {
    document.querySelectorAll("textarea[data-counter]").forEach(updateCounter);
    setupCollapse();
    setupNewComments();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
