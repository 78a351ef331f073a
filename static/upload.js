// Drag and drop of session files anywhere on the page. The dropped files go into the upload form's file
// input and the form is submitted as if they had been chosen by hand, so the server sees the same request
// either way (htmx sends it and swaps in the results; without htmx the browser posts the form).

const form = document.querySelector("form[data-upload]");

if (form) {
  const input = form.querySelector('input[type="file"]');
  const status = form.querySelector("[data-upload-status]");
  const hint = form.querySelector("[data-drop-hint]");
  const maxFiles = Number.parseInt(form.dataset.maxFiles || "", 10) || 0;
  // dragenter/dragleave fire for every child element crossed; count them to know when the drag leaves.
  let depth = 0;

  if (hint) {
    hint.hidden = false;
  }

  const carriesFiles = (event) =>
    event.dataTransfer !== null && Array.from(event.dataTransfer.types).includes("Files");

  const say = (text) => {
    if (status) {
      status.textContent = text;
    }
  };

  const stopDragging = () => {
    depth = 0;
    document.body.classList.remove("dragging");
  };

  document.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event)) {
      return;
    }
    event.preventDefault();
    depth += 1;
    document.body.classList.add("dragging");
  });

  document.addEventListener("dragover", (event) => {
    if (!carriesFiles(event)) {
      return;
    }
    // Without this the browser would open the dropped file instead of handing it to the page.
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
  });

  document.addEventListener("dragleave", (event) => {
    if (!carriesFiles(event)) {
      return;
    }
    depth = Math.max(0, depth - 1);
    if (depth === 0) {
      document.body.classList.remove("dragging");
    }
  });

  document.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) {
      return;
    }
    event.preventDefault();
    stopDragging();
    const files = Array.from(event.dataTransfer.files);
    if (files.length === 0) {
      say("Nothing to upload: drop files, not folders.");
      return;
    }
    if (maxFiles > 0 && files.length > maxFiles) {
      say(`At most ${maxFiles} files at a time: drop them in smaller groups.`);
      return;
    }
    const transfer = new DataTransfer();
    for (const file of files) {
      transfer.items.add(file);
    }
    input.files = transfer.files;
    say(`Uploading ${files.length} file${files.length === 1 ? "" : "s"}…`);
    form.requestSubmit();
  });

  // The results replace the session list; clear the form for the next upload.
  form.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.elt === form) {
      say(event.detail.successful ? "" : "The upload failed; see the server's answer or try again.");
      if (event.detail.successful) {
        form.reset();
      }
    }
  });
}
