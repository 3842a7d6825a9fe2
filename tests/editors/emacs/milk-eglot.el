;;; milk-eglot.el --- milk-lsp through eglot, no milk package  -*- lexical-binding: t -*-
;; Emacs 29+ (eglot built in), or Emacs 28 with Debian's elpa-eglot. Put this in init.el.
;; Settings: ~/.config/milk/config.json (or :initializationOptions in the server entry).
(require 'eglot)
(require 'url-parse)

;; milk-lsp for Python buffers. eglot runs one server per major mode and project, so this
;; entry takes the place of another Python server; list the modes you want milk in.
(add-to-list 'eglot-server-programs '((python-mode python-ts-mode) . ("milk-lsp")))
(add-hook 'python-mode-hook #'eglot-ensure)

(defun milk-command (command &rest arguments)
  "Run milk's COMMAND (a string such as \"milk.ask\") with ARGUMENTS; return its answer."
  (eglot-execute-command (or (eglot-current-server) (user-error "No eglot server here"))
                         (intern command) (vconcat arguments)))

(defun milk-transcript ()
  "Open the current session's transcript: a Markdown file milk writes as the chat goes on.
eglot 1.9 (Debian 12's elpa-eglot) does not open documents for the server (it has no
window/showDocument), so this asks `milk.openTranscript' for the file and keeps the buffer
fresh with `auto-revert-mode' as milk rewrites it."
  (interactive)
  (let* ((answer (milk-command "milk.openTranscript"))
         (file (url-unhex-string (url-filename (url-generic-parse-url
                                                (plist-get answer :uri))))))
    (with-current-buffer (find-file-noselect file)
      (auto-revert-mode 1)
      (add-hook 'after-revert-hook #'milk-follow-transcript nil t)
      (display-buffer (current-buffer))
      (milk-follow-transcript)
      (current-buffer))))

(defun milk-follow-transcript ()
  "Move each window showing the transcript to its newest text, the line above the marker
line (run after each revert); not while a question is typed below the marker."
  (save-excursion
    (goto-char (point-max))
    (when (and (re-search-backward "^<!-- milk: type your question below" nil t)
               (string-blank-p (buffer-substring-no-properties (line-end-position) (point-max))))
      (skip-chars-backward "\n")
      (dolist (window (get-buffer-window-list (current-buffer) nil t))
        (set-window-point window (line-beginning-position))))))
