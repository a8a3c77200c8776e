/* ReDoc 2.x (drf-spectacular-sidecar's bundle) credits itself at the foot of its menu with a
   logo it fetches from cdn.redoc.ly, and has no option to leave it out. The API docs ask
   nothing of another site (and the docs' Content-Security-Policy allows images from this
   site and data: URLs only), so that one image is given an empty data: URL instead: it
   fails to decode, ReDoc drops the <img> and the "API docs by Redocly" link stays as text.
   Loaded before the bundle; every other attribute passes through untouched. */
(function () {
  "use strict";
  var CREDIT_LOGO = /^https?:\/\/cdn\.redoc\.ly\//;
  function local(value) { return CREDIT_LOGO.test(String(value)) ? "data:," : value; }
  var setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    return setAttribute.call(this, name, this instanceof HTMLImageElement && name === "src" ? local(value) : value);
  };
  var src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    configurable: true, enumerable: src.enumerable, get: src.get,
    set: function (value) { src.set.call(this, local(value)); }
  });
})();
