document.querySelectorAll("figure.plot img").forEach(function (img) {
  function mark() {
    var ok = img.complete && img.naturalWidth > 0 && img.naturalHeight > 0;
    img.closest("figure").dataset.rendered =
      ok ? img.naturalWidth + "x" + img.naturalHeight : "failed";
  }
  if (img.complete) { mark(); } else { img.addEventListener("load", mark);
                                      img.addEventListener("error", mark); }
});
