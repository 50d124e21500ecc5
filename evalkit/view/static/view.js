// evalkit view: the only script of the pages (the server forbids any other). It submits a
// filter form when one of its selects or checkboxes changes; without it, the forms' buttons
// do the same.
"use strict";
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLElement && field.hasAttribute("data-autosubmit") && field.form) {
    field.form.requestSubmit();
  }
});
