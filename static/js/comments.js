/* Comments, progressively enhanced. Without this script every form does a full round trip
   and everything works; with it, like/unlike, reply, edit and delete happen in place (the
   server answers `X-Requested-With: fetch` with the re-rendered comment as HTML, or a JSON
   error that is shown beside the kept text), an editor's "Moderate" menu too (answered with
   JSON: the server's message and the re-rendered comment), textareas count characters, and
   threads collapse. */
(function () {
  "use strict";

  /* In-place requests still waiting for their answer: the live stream's changes wait for them
     (the answer puts the reader's own reply or edit on the page and focuses it; the stream's
     copy of the same change then finds it there). */
  var inFlight = 0, afterFlight = [];
  function landed() {
    inFlight -= 1;
    while (inFlight === 0 && afterFlight.length) afterFlight.shift()();
  }

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
      if (!article.isConnected && article.id) article = document.getElementById(article.id) || article; /* replaced live */
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
    inFlight += 1;
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
            /* The live stream may have replaced the comment (or shown the new reply) meanwhile:
               work on what the page shows now. */
            if (article && !article.isConnected && article.id) article = document.getElementById(article.id) || article;
            var already = el.id && document.getElementById(el.id);
            if (kind === "reply" && already) {
              place(el, already, depthOf(already));
              already.replaceWith(el);
              form.reset();
              form.querySelectorAll("textarea[data-counter]").forEach(updateCounter);
              var open = form.closest("details");
              if (open) open.open = false;
            } else if (kind === "reply") {
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
        landed();
        setTimeout(function () { buttons.forEach(function (b) { b.disabled = false; }); }, wait);
      });
  });

  /* "N new comments": the page's live stream (Server-Sent Events on `data-live-url`: new comments,
     edits, removals and like counts as they happen), or, without EventSource or when the stream
     fails repeatedly, polling the page's cheap endpoint (comments after the count the page was
     shown with). A new comment goes straight into the list where it belongs at its end (the last
     chronological page, `data-tail`) or under its parent when that is on a threaded page; elsewhere
     the notice says how many arrived and shows them on demand, without a reload. */
  function setupNewComments() {
    var box = document.querySelector(".new-comments[data-new-url]");
    if (!box || !window.fetch) return;
    var notice = box.querySelector(".new-notice"), button = notice.querySelector("button");
    var list = box.querySelector(".new-list"), waiting = [], delay = 1000 * (parseInt(box.dataset.interval, 10) || 30);
    var more = false, polling = false;
    function fresh(ids) { return ids.filter(function (id) { return !document.getElementById("c-" + id); }); }
    function isWaiting(id) { return waiting.some(function (el) { return el.dataset.id === id; }); }
    function announce() {
      if (!waiting.length) return;
      button.textContent = waiting.length + (waiting.length === 1 ? " new comment" : " new comments") +
        (more ? " (and more: reload)" : "") + ": show";
      notice.hidden = false;
    }
    function count(total) {
      var title = document.getElementById("comments-title");
      if (title && total > 0) title.textContent = total + (total === 1 ? " comment" : " comments");
    }
    function poll() {
      if (document.hidden) { setTimeout(poll, delay); return; }
      fetch(box.dataset.newUrl + "?after=" + encodeURIComponent(box.dataset.after),
            {credentials: "same-origin", headers: {"X-Requested-With": "fetch"}})
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (body && body.count) {
            box.dataset.after = body.last;
            more = body.more;
            var doc = fragment("<div>" + body.html + "</div>");
            Array.prototype.slice.call(doc.children).forEach(function (el) {
              if (fresh([el.dataset.id]).length && !isWaiting(el.dataset.id)) waiting.push(el);
            });
          }
          announce();
        })
        .catch(function () {})
        .finally(function () { setTimeout(poll, delay); });
    }
    function startPolling() {
      if (polling || !(delay > 0) || !box.dataset.interval || box.dataset.interval === "0") return;
      polling = true;
      setTimeout(poll, delay);
    }
    /* One comment of the stream: replace it where it is shown (a like, an edit, a removal), keeping
       an open reply or edit form of it (then only its like count changes); a new one goes in place
       or to the notice. */
    function live(data, hiddenNow) {
      if (inFlight > 0) { afterFlight.push(function () { live(data, hiddenNow); }); return; }
      var el = fragment(data.html), shown = document.getElementById("c-" + data.id);
      if (shown) {
        /* The reader is at work on this comment (focus inside it, a form open, a message shown
           beside it): only its like count changes under them. */
        if (shown.contains(document.activeElement) || shown.querySelector("details[open], .field-error.js, .moderation-note")) {
          var likes = shown.querySelector(".likes"), now = el.querySelector(".likes");
          if (likes && now) likes.textContent = now.textContent;
          return;
        }
        place(el, shown, depthOf(shown));
        shown.replaceWith(el);
        setupCollapse();
        return;
      }
      if (hiddenNow || !data.new) return;
      waiting = waiting.filter(function (w) { return w.dataset.id !== data.id; });
      if (data.seq > parseInt(box.dataset.after, 10)) box.dataset.after = data.seq;
      var parent = data.parent && document.getElementById("c-" + data.parent);
      var threaded = document.querySelector(".comment-list.threaded");
      if (parent && threaded && threaded.contains(parent)) {
        var kids = descendants(parent);
        place(el, parent, depthOf(parent) + 1);
        (kids.length ? kids[kids.length - 1] : parent).after(el);
      } else if (box.dataset.tail && !threaded) {
        var target = document.querySelector(".comment-list");
        var empty = target && target.querySelector(":scope > p.empty");
        if (empty) empty.remove();
        place(el, target, 0);
        target.appendChild(el);
      } else {
        waiting.push(el);
        announce();
        return;
      }
      el.classList.add("flash");
      setupCollapse();
      count(parseInt(box.dataset.after, 10));
    }
    function stream() {
      var failures = 0, url = box.dataset.liveUrl + "?after=" + encodeURIComponent(box.dataset.after);
      var source = new EventSource(url, {withCredentials: true});
      function parse(handler) {
        return function (e) { try { handler(JSON.parse(e.data)); } catch (err) { /* a malformed message: skip it */ } };
      }
      source.addEventListener("open", function () { failures = 0; });
      source.addEventListener("comment", parse(function (data) { live(data, false); }));
      source.addEventListener("hidden", parse(function (data) { live(data, true); }));
      source.addEventListener("reset", parse(function (data) {
        /* The stream cannot resume (too long away): say so, and poll for new comments meanwhile. */
        source.close();
        box.dataset.liveFailed = "reset";
        button.textContent = data.detail || "Reload the page to see the latest changes.";
        notice.hidden = false;
        startPolling();
      }));
      source.addEventListener("error", function () {
        /* The browser reconnects by itself (with Last-Event-ID: nothing missed) unless the answer
           was not a stream (CLOSED: a 404 or a 503 without change streams); after repeated
           failures the page polls instead. */
        failures += 1;
        if (source.readyState === EventSource.CLOSED || failures >= 5) {
          source.close();
          box.dataset.liveFailed = "error";
          startPolling();
        }
      });
      window.__commentsLive = source; /* for the browser tests and the curious */
    }
    button.addEventListener("click", function () {
      if (box.dataset.liveFailed === "reset" && !waiting.length) { window.location.reload(); return; }
      waiting.forEach(function (el) { if (!document.getElementById(el.id)) { list.appendChild(el); el.classList.add("flash"); } });
      waiting = [];
      list.hidden = false;
      notice.hidden = true;
      /* The heading counts the discussion as the server last answered (its `last` is the total). */
      count(parseInt(box.dataset.after, 10));
      var newest = list.lastElementChild;
      if (newest && newest.focus) { newest.setAttribute("tabindex", "-1"); newest.focus({preventScroll: false}); }
    });
    if (box.dataset.liveUrl && window.EventSource) stream(); else startPolling();
  }

  function init() {
    document.querySelectorAll("textarea[data-counter]").forEach(updateCounter);
    setupCollapse();
    setupNewComments();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
