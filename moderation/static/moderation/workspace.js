// The moderation queue worked by keyboard: one key per action on the current comment (or on the
// selected ones), its author's history beside it, undo of the last action, and the tabs' counts
// kept current. Without JavaScript the page is the same queue with its bulk-action form.
(function () {
  "use strict";

  function start() {
    var box = document.querySelector(".workspace");
    var rows = Array.prototype.slice.call(document.querySelectorAll("#result_list tr[data-entry]"));
    if (!box || !rows.length) { return; }
    box.hidden = false;
    var drawer = document.querySelector(".author-drawer");
    var status = box.querySelector(".workspace-status");
    var undoButton = box.querySelector("[data-undo]");
    var token = document.querySelector("input[name=csrfmiddlewaretoken]").value;
    var current = -1;
    var undoStack = [];
    var authorShown = null;
    var keys = {a: "approve", r: "reject", h: "hide", b: "ban_author"};
    var labels = {approve: "Approved", reject: "Rejected", hide: "Hidden", ban_author: "Author banned"};

    function say(text) { status.textContent = text; }

    function post(fields) {
      var body = new URLSearchParams();
      Object.keys(fields).forEach(function (name) {
        [].concat(fields[name]).forEach(function (value) { body.append(name, value); });
      });
      return fetch(box.dataset.actUrl, {
        method: "POST", body: body, credentials: "same-origin",
        headers: {"X-CSRFToken": token, "X-Requested-With": "fetch"}
      }).then(function (response) {
        return response.json().then(function (data) {
          if (!response.ok) { throw new Error(data.detail || "The action was refused."); }
          return data;
        });
      });
    }

    function showCounts(counts) {
      Object.keys(counts || {}).forEach(function (key) {
        document.querySelectorAll('[data-count="' + key + '"]').forEach(function (el) {
          el.textContent = counts[key];
        });
      });
    }

    function showAuthor(row) {
      var name = row.dataset.author;
      if (!name || name === authorShown) { return; }
      authorShown = name;
      fetch(box.dataset.authorUrl + "?username=" + encodeURIComponent(name), {credentials: "same-origin"})
        .then(function (response) { return response.text(); })
        .then(function (html) { if (authorShown === name) { drawer.innerHTML = html; } });
    }

    function go(index) {
      if (index < 0 || index >= rows.length) { return; }
      if (current >= 0) { rows[current].classList.remove("current"); rows[current].removeAttribute("aria-current"); }
      current = index;
      var row = rows[current];
      row.classList.add("current");
      row.setAttribute("aria-current", "true");
      row.focus();
      showAuthor(row);
    }

    function targets() {
      var checked = rows.filter(function (row) {
        var box = row.querySelector("input[name=entries]");
        return box && box.checked;
      });
      return checked.length ? checked : (current >= 0 ? [rows[current]] : []);
    }

    function act(action) {
      var chosen = targets();
      if (!chosen.length) { say("Choose a comment first (j, k)."); return; }
      var ids = chosen.map(function (row) { return row.dataset.entry; });
      post({action: action, entries: ids}).then(function (data) {
        say(data.detail);
        showCounts(data.counts);
        if (data.changed) {
          chosen.forEach(function (row) {
            row.classList.add("acted");
            row.querySelector(".row-status").textContent = labels[action] || action;
            var box = row.querySelector("input[name=entries]");
            if (box) { box.checked = false; }
          });
        }
        if (data.undo && data.undo.length) {
          undoStack.push({undo: data.undo, rows: chosen});
          undoButton.disabled = false;
        }
        if (chosen.length === 1 && chosen[0] === rows[current]) { go(current + 1); }
      }).catch(function (error) { say(error.message); });
    }

    function undo() {
      var last = undoStack.pop();
      undoButton.disabled = !undoStack.length;
      if (!last) { say("Nothing to undo."); return; }
      var steps = last.undo.map(function (step) {
        return step.user_action ? {user_action: step.user_action, usernames: step.usernames}
                                : {action: step.action, entries: step.entries};
      });
      steps.reduce(function (done, fields) {
        return done.then(function () { return post(fields); });
      }, Promise.resolve()).then(function () {
        last.rows.forEach(function (row) {
          row.classList.remove("acted");
          row.querySelector(".row-status").textContent = row.dataset.was;
        });
        return fetch(box.dataset.countsUrl, {credentials: "same-origin"}).then(function (r) { return r.json(); });
      }).then(function (data) {
        showCounts(data.counts);
        say("Undone.");
        go(rows.indexOf(last.rows[0]));
      }).catch(function (error) { say(error.message); });
    }

    rows.forEach(function (row, index) {
      row.dataset.was = row.querySelector(".row-status").textContent.trim();
      row.addEventListener("click", function (event) {
        if (!event.target.closest("a, input, button")) { go(index); }
      });
    });
    box.querySelectorAll("[data-action]").forEach(function (button) {
      button.addEventListener("click", function () { act(button.dataset.action); });
    });
    undoButton.addEventListener("click", undo);

    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) { return; }
      if (event.target.closest("input, select, textarea, [contenteditable]")) { return; }
      var key = event.key;
      if (key === "j" || key === "ArrowDown") { go(Math.min(current + 1, rows.length - 1)); }
      else if (key === "k" || key === "ArrowUp") { go(Math.max(current - 1, 0)); }
      else if (keys[key]) { act(keys[key]); }
      else if (key === "u") { undo(); }
      else if (key === "x" && current >= 0) {
        var check = rows[current].querySelector("input[name=entries]");
        if (check) { check.checked = !check.checked; }
      }
      else if (key === "o" && current >= 0) {
        var link = rows[current].querySelector("td:nth-child(2) a");
        if (link) { window.location.href = link.href; }
      }
      else { return; }
      event.preventDefault();
    });

    // The tabs' counts as other editors work: polled, as the topic page polls for new comments.
    setInterval(function () {
      if (document.hidden) { return; }
      fetch(box.dataset.countsUrl, {credentials: "same-origin"})
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) { if (data) { showCounts(data.counts); } });
    }, 30000);
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); }
  else { start(); }
})();
