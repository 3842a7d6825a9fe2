;;; test_eglot.el --- eglot drives milk-lsp through standard LSP alone  -*- lexical-binding: t -*-
;;
;; Emacs in --batch with NO milk package: only the config in milk-eglot.el (eglot's
;; `eglot-server-programs' entry, `eglot-ensure', two small commands) and what eglot has built
;; in: `eglot-code-actions', `eglot-execute-command', workspace/applyEdit and
;; window/showMessageRequest (answered through `completing-read', overridden here as a user
;; typing the answer). Run by run.sh against the scripted OpenAI-compatible server and the
;; real Claude CLI on the Messages-API stand-in (URLs in MILK_TEST_OPENAI and
;; MILK_TEST_ANTHROPIC; the server's settings in the throwaway config.json).
;;
;; Prints "test_eglot: N passed, N failed" (test_eglot_batched with MILK_TEST_BATCHED) and exits
;; 0 or 1.

(require 'cl-lib)
(require 'subr-x)
(require 'json)

(defconst milk-test-here (file-name-directory (or load-file-name buffer-file-name)))
(defconst milk-test-ws (file-name-as-directory (getenv "MILK_TEST_WS")))
(defconst milk-test-openai (getenv "MILK_TEST_OPENAI"))
(defconst milk-test-anthropic (getenv "MILK_TEST_ANTHROPIC"))
(defconst milk-test-python
  (expand-file-name "bin/python" (or (getenv "MILK_VENV")
                                     (expand-file-name "../../../.venv" milk-test-here))))
(defvar milk-test-passed 0)
(defvar milk-test-failed 0)
(defconst milk-test-start (float-time))

;; ---- checks and output ----------------------------------------------------------------

(defun milk-test-log (format-string &rest args)
  (princ (format "[%6.2f] %s\n" (- (float-time) milk-test-start)
                 (apply #'format format-string args))))

(defun milk-test-check (what ok &optional detail)
  (if ok
      (progn (cl-incf milk-test-passed) (milk-test-log "ok   %s" what))
    (cl-incf milk-test-failed)
    (milk-test-log "FAIL %s%s" what (if detail (format ": %S" detail) "")))
  ok)

(defun milk-test-wait (seconds pred)
  "Run the event loop (process output, timers) until PRED is true or SECONDS pass."
  (let ((end (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) end))
      (accept-process-output nil 0.05))
    (funcall pred)))

;; ---- the scripted model servers ----------------------------------------------------------

(defconst milk-test-http-code "
import sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(url, data=data, method=method, headers={'Content-Type': 'application/json'})
with urllib.request.urlopen(req, timeout=20) as r:
    sys.stdout.write(r.read().decode())
")

(defun milk-test-origin (url)
  (and (string-match "\\`\\(https?://[^/]+\\)" url) (match-string 1 url)))

(defun milk-test-http (method url &optional json)
  "METHOD on URL with the JSON text JSON; the answer parsed (objects as alists)."
  (with-temp-buffer
    (let ((status (apply #'call-process milk-test-python nil t nil "-c" milk-test-http-code
                         method url (and json (list json)))))
      (unless (eq status 0)
        (error "HTTP %s %s failed: %s" method url (buffer-string)))
      (goto-char (point-min))
      (unless (= (point-min) (point-max))
        (json-parse-buffer :object-type 'alist :array-type 'list
                           :null-object nil :false-object nil)))))

(defun milk-test-script-openai (json)
  (milk-test-http "POST" (concat (milk-test-origin milk-test-openai) "/_script") json))

(defun milk-test-script-anthropic (json)
  (milk-test-http "POST" (concat (milk-test-origin milk-test-anthropic) "/_script") json))

(defun milk-test-openai-state ()
  (milk-test-http "GET" (concat (milk-test-origin milk-test-openai) "/_state")))

;; ---- what the user would see and answer --------------------------------------------------

(defvar milk-test-reads nil "Every `completing-read': (PROMPT CHOICES ANSWER), newest first.")
(defvar milk-test-answer (lambda (_prompt _choices) nil)
  "Picks the answer of a `completing-read' (nil: the user quits with C-g).")

(defun milk-test-completing-read (prompt collection &rest _)
  (let* ((choices (mapcar (lambda (c) (if (consp c) (car c) c))
                          (if (functionp collection) (all-completions "" collection) collection)))
         (answer (funcall milk-test-answer prompt choices)))
    (push (list prompt choices answer) milk-test-reads)
    (or answer (signal 'quit nil))))
(advice-add 'completing-read :override #'milk-test-completing-read)

(defvar milk-test-questions nil "Every `y-or-n-p' prompt (answered yes).")
(advice-add 'y-or-n-p :override (lambda (prompt) (push prompt milk-test-questions) t))

(defvar milk-test-messages nil "What eglot showed in the echo area (showMessage, errors).")
(advice-add 'eglot--message :before
            (lambda (format-string &rest args)
              (push (apply #'format format-string args) milk-test-messages)))

(defun milk-test-choose (title)
  (lambda (_prompt choices) (car (member title choices))))

;; Polling auto-revert, fast: a test runs no command loop to deliver file notifications.
(setq auto-revert-interval 0.2 auto-revert-use-notify nil auto-revert-verbose nil)

;; ---- the user's init.el ------------------------------------------------------------------

(load (expand-file-name "milk-eglot.el" milk-test-here) nil t)

;; MILK_TEST_BATCHED=SECONDS: the same scenario with milk-lsp's output handed to Emacs in
;; batches every SECONDS (batched_pipe.py), as a busy Emacs reads a pipe. Emacs 28's
;; jsonrpc reads what follows an answer in the same read only when more output comes: milk's
;; `$/milk/nudge' is that output (without it the permission question after `milk.ask' waits).
(defconst milk-test-batched (getenv "MILK_TEST_BATCHED"))
(defconst milk-test-name (if milk-test-batched "test_eglot_batched" "test_eglot"))
(when milk-test-batched
  (push `((python-mode python-ts-mode)
          . (,milk-test-python ,(expand-file-name "batched_pipe.py" milk-test-here)
                               ,milk-test-batched "milk-lsp"))
        eglot-server-programs))

(defvar milk-test-transcript nil "The transcript's buffer, once opened.")

(defun milk-test-transcript-text ()
  (if (buffer-live-p milk-test-transcript)
      (with-current-buffer milk-test-transcript
        (buffer-substring-no-properties (point-min) (point-max)))
    ""))

(defun milk-test-wait-transcript (needle &optional seconds)
  (milk-test-wait (or seconds 60)
                  (lambda () (string-search needle (milk-test-transcript-text)))))

(defun milk-test-turn-ends ()
  "How many turns the transcript shows as ended."
  (let ((text (milk-test-transcript-text)) (count 0) (start 0))
    (while (string-match "^\\(\\*\\(Done\\|Cancelled\\|Stopped[^*]*\\)\\.\\*\\|\\*\\*Failed:\\*\\*\\)"
                         text start)
      (cl-incf count)
      (setq start (match-end 0)))
    count))

(defun milk-test-wait-turn-end (count &optional seconds)
  (milk-test-wait (or seconds 90) (lambda () (>= (milk-test-turn-ends) count))))

;; ---- the scenario ------------------------------------------------------------------------

(cl-defun milk-test-scenario ()
  (milk-test-check "no milk package loaded" (not (featurep 'milk)))
  (let ((config (with-temp-buffer
                  (insert-file-contents (expand-file-name "milk-eglot.el" milk-test-here))
                  (buffer-string)))
        (page (with-temp-buffer
                (insert-file-contents (expand-file-name "../../../docs/editors/emacs.md"
                                                        milk-test-here))
                (buffer-string))))
    (milk-test-check "docs/editors/emacs.md quotes milk-eglot.el verbatim"
                     (string-search (concat "```elisp\n" config "```") page)))
  (let* ((default-directory milk-test-ws)
         (file (expand-file-name "hello.py" milk-test-ws))
         server py)
    (with-temp-file file
      (insert "def greet(name):\n"
              "    \"\"\"Say hello.\"\"\"\n"
              "    return \"hello \" + name\n"
              "\n"
              "print(greet(\"world\"))\n"))
    ;; C-x C-f hello.py: python-mode, eglot-ensure connects after the command (post-command).
    (setq py (find-file file))
    (with-current-buffer py (run-hooks 'post-command-hook))
    (milk-test-wait 30 (lambda () (with-current-buffer py
                                    (and (eglot-current-server) eglot--managed-mode))))
    (setq server (with-current-buffer py (eglot-current-server)))
    (unless (milk-test-check "eglot started milk-lsp and manages hello.py" server
                             milk-test-messages)
      (cl-return-from milk-test-scenario))
    (let* ((caps (eglot--capabilities server))
           (listed (append (plist-get (plist-get caps :executeCommandProvider) :commands) nil))
           (missing (cl-remove-if
                     (lambda (c) (member c listed))
                     '("milk.ask" "milk.send" "milk.escalate" "milk.cancel" "milk.newSession"
                       "milk.switchSession" "milk.showContext" "milk.status"
                       "milk.openTranscript"))))
      (milk-test-check "executeCommandProvider lists the milk.* commands" (null missing)
                       (list :missing missing :listed listed))
      (milk-test-check "codeActionProvider" (plist-get caps :codeActionProvider))
      (when missing (cl-return-from milk-test-scenario)))

    ;; 1. Select lines 1-3, M-x eglot-code-actions, pick "milk: Ask about this selection".
    (milk-test-script-openai
     "[{\"text\": \"greet() returns \\\"hello \\\" followed by the name.\", \"chunk_chars\": 4}]")
    (setq milk-test-answer (milk-test-choose "milk: Ask about this selection"))
    (with-current-buffer py
      (transient-mark-mode 1)
      (goto-char (point-min))
      (set-mark (point))
      (forward-line 3)
      (activate-mark)
      ;; A keyboard-driven M-x (a mouse click would pop up a menu instead).
      (let ((last-nonmenu-event ?\r))
        (call-interactively #'eglot-code-actions))
      (deactivate-mark))
    (let ((menu (car (last milk-test-reads))))
      (milk-test-check "eglot-code-actions on a selection offers \"milk: Ask about this selection\""
                       (member "milk: Ask about this selection" (nth 1 menu)) menu)
      (milk-test-check "no diagnostic actions without a diagnostic"
                       (not (member "milk: Explain this diagnostic" (nth 1 menu))) menu))
    (setq milk-test-transcript (with-current-buffer py (milk-transcript)))
    (milk-test-check "milk-transcript opened the transcript file outside the workspace"
                     (and (buffer-live-p milk-test-transcript)
                          (not (string-prefix-p (file-truename milk-test-ws)
                                                (file-truename (buffer-file-name milk-test-transcript)))))
                     (and (buffer-live-p milk-test-transcript) (buffer-file-name milk-test-transcript)))
    (milk-test-check "the answer appears in the transcript buffer"
                     (milk-test-wait-transcript "greet() returns \"hello \" followed by the name.")
                     (milk-test-transcript-text))
    (milk-test-check "the transcript shows the question"
                     (string-search "## You" (milk-test-transcript-text))
                     (milk-test-transcript-text))
    (milk-test-check "the first turn ended" (milk-test-wait-turn-end 1) (milk-test-transcript-text))
    (milk-test-check "the local model received the selected lines"
                     (string-search "Say hello."
                                    (json-encode (milk-test-http
                                                  "GET" (concat (milk-test-origin milk-test-openai)
                                                                "/_requests")))))

    ;; 2. A permission question (window/showMessageRequest → completing-read): "Allow once".
    (milk-test-script-openai
     (concat "[{\"tool_calls\": [{\"name\": \"run_command\", \"arguments\": "
             "{\"command\": \"touch made-by-milk.txt\"}}]},"
             " {\"text\": \"I created made-by-milk.txt.\"}]"))
    (setq milk-test-answer (milk-test-choose "Allow once"))
    (let ((before (length milk-test-reads)))
      (with-current-buffer py
        ;; M-: (eglot-execute-command (eglot-current-server) 'milk.ask ["…"]), via milk-command.
        (milk-command "milk.ask" "create made-by-milk.txt"))
      (milk-test-wait 60 (lambda () (> (length milk-test-reads) before)))
      (let ((ask (car milk-test-reads)))
        (milk-test-check "the permission question reached completing-read"
                         (> (length milk-test-reads) before) milk-test-reads)
        (milk-test-check "the question shows the command"
                         (string-search "touch made-by-milk.txt" (nth 0 ask)) (nth 0 ask))
        ;; issue 20 item 18: who asks for what on the first line, in one short sentence
        (milk-test-check "the question's first line says who asks to run what"
                         (string-suffix-p "The local model asks to run `touch made-by-milk.txt`."
                                          (car (split-string (nth 0 ask) "\n")))
                         (nth 0 ask))
        (milk-test-check "the question is short (the asker line, then Choose an option)"
                         (= (length (split-string (nth 0 ask) "\n")) 2) (nth 0 ask))
        (milk-test-check "the answers are Allow once / Allow for this session / Deny"
                         (equal (nth 1 ask) '("Allow once" "Allow for this session" "Deny"))
                         (nth 1 ask))))
    (milk-test-check "the allowed turn answered"
                     (milk-test-wait-transcript "I created made-by-milk.txt.")
                     (milk-test-transcript-text))
    (milk-test-check "the allowed command ran"
                     (file-exists-p (expand-file-name "made-by-milk.txt" milk-test-ws)))
    (milk-test-check "the transcript shows the tool call"
                     (string-search "touch made-by-milk.txt" (milk-test-transcript-text)))
    (milk-test-check "the second turn ended" (milk-test-wait-turn-end 2))
    ;; issue 20 item 17: the transcript records the question and the answer, no "waiting"
    (milk-test-check "the transcript records the question and the answer"
                     (milk-test-wait-transcript "> You answered: Allow once." 10)
                     (milk-test-transcript-text))
    (milk-test-check "the transcript names the asker and the command"
                     (string-search "> **Permission asked:** The local model asks to run `touch made-by-milk.txt`."
                                    (milk-test-transcript-text)))
    (milk-test-check "no \"Waiting for your permission\" left behind"
                     (not (string-search "Waiting for your permission" (milk-test-transcript-text))))
    ;; issue 20 item 16: the transcript's window follows the newest text
    (let ((window (get-buffer-window milk-test-transcript t)))
      (milk-test-check "the transcript's window is at its newest text"
                       (and window
                            (milk-test-wait
                             10 (lambda ()
                                  (with-current-buffer milk-test-transcript
                                    (> (window-point window)
                                       (save-excursion (goto-char (point-max))
                                                       (search-backward "I created made-by-milk.txt.")))))))
                       (and window (list (window-point window)
                                         (with-current-buffer milk-test-transcript (point-max))))))

    ;; Review: the transcript lists the turn's changed files; milk.undo takes them back.
    (milk-test-check "the transcript lists the changed file"
                     (string-search "**Changed files:** `made-by-milk.txt` (new"
                                    (milk-test-transcript-text))
                     (milk-test-transcript-text))
    (let ((result (with-current-buffer py (milk-command "milk.undo"))))
      (milk-test-check "milk.undo → the created file is restored (gone)"
                       (and (= (length (plist-get result :restored)) 1)
                            (not (file-exists-p (expand-file-name "made-by-milk.txt" milk-test-ws))))
                       result))
    (milk-test-check "the transcript notes the undo" (milk-test-wait-transcript "Undid turn" 10)
                     (milk-test-transcript-text))

    ;; 3. Cancel a running turn: the local model stalls; milk.cancel ends the turn.
    (milk-test-script-openai "[{\"stall\": 60, \"text\": \"this never arrives\"}]")
    (let ((result (with-current-buffer py (milk-command "milk.ask" "take your time"))))
      (milk-test-check "milk.ask answered at once while the turn runs" (plist-get result :turnId)
                       result))
    (milk-test-wait 20 (lambda () (> (or (alist-get 'openStreams (milk-test-openai-state)) 0) 0)))
    (milk-test-check "the turn is running (the model stream is open)"
                     (eql (alist-get 'openStreams (milk-test-openai-state)) 1))
    (let ((result (with-current-buffer py (milk-command "milk.cancel"))))
      (milk-test-check "milk.cancel → {cancelled: true}" (eq (plist-get result :cancelled) t) result))
    (milk-test-check "the cancelled turn ended" (milk-test-wait-turn-end 3 30)
                     (milk-test-transcript-text))
    (milk-test-check "the transcript says Cancelled"
                     (string-search "*Cancelled.*" (milk-test-transcript-text)))
    (milk-test-check "the model stream was closed"
                     (milk-test-wait 10 (lambda () (>= (or (alist-get 'disconnects
                                                                      (milk-test-openai-state))
                                                           0)
                                                       1))))
    (milk-test-check "no text after the cancel"
                     (not (string-search "this never arrives" (milk-test-transcript-text))))
    (let ((result (with-current-buffer py (milk-command "milk.cancel"))))
      (milk-test-check "milk.cancel with nothing running → {cancelled: false}"
                       (eq (plist-get result :cancelled) :json-false) result))

    ;; 4. Escalate: milk.escalate → the real Claude CLI on the Messages-API stand-in.
    (milk-test-script-anthropic
     "[{\"text\": \"Claude here: greet() is fine as it is.\", \"chunk_chars\": 5}]")
    (let ((result (with-current-buffer py (milk-command "milk.escalate" "is greet() correct?"))))
      (milk-test-check "milk.escalate answered at once with the turn" (plist-get result :turnId)
                       result))
    (milk-test-check "Claude's answer appears in the transcript"
                     (milk-test-wait-transcript "Claude here: greet() is fine as it is." 120)
                     (milk-test-transcript-text))
    (milk-test-check "the escalated turn ended" (milk-test-wait-turn-end 4 120))
    (let ((sent (json-encode (milk-test-http "GET" (concat (milk-test-origin milk-test-anthropic)
                                                           "/_requests")))))
      (milk-test-check "the stand-in received the question"
                       (string-search "is greet() correct?" sent)))

    ;; 5. Cancel a Claude turn: the session stays with Claude (escalated), the stand-in
    ;; stalls after its first chunk; milk.cancel stops the CLI.
    (milk-test-script-anthropic
     "[{\"stall\": 60, \"text\": \"Working on it. This never arrives.\", \"chunk_chars\": 15}]")
    (let ((result (with-current-buffer py (milk-command "milk.ask" "and the print line?"))))
      (milk-test-check "milk.ask on the escalated session answered at once"
                       (plist-get result :turnId) result))
    (milk-test-check "Claude's first words appear in the transcript"
                     (milk-test-wait-transcript "Working on it." 120) (milk-test-transcript-text))
    (let ((result (with-current-buffer py (milk-command "milk.cancel"))))
      (milk-test-check "milk.cancel of the Claude turn → {cancelled: true}"
                       (eq (plist-get result :cancelled) t) result))
    (milk-test-check "the cancelled Claude turn ended" (milk-test-wait-turn-end 5 30)
                     (milk-test-transcript-text))
    (milk-test-check "nothing of Claude's after the cancel"
                     (not (string-search "This never arrives." (milk-test-transcript-text))))

    ;; 6. A bad argument gets an error naming it.
    (let ((err (condition-case e (progn (with-current-buffer py
                                          (milk-command "milk.switchSession" 42))
                                        nil)
                 (jsonrpc-error e))))
      (milk-test-check "a bad argument is an error -32602 naming it"
                       (and err (eql (alist-get 'jsonrpc-error-code (cdr err)) -32602)
                            (string-search "session" (format "%s" (alist-get 'jsonrpc-error-message
                                                                             (cdr err)))))
                       err))
    (milk-test-check "eglot asked no y-or-n-p question" (null milk-test-questions)
                     milk-test-questions)))

(let ((ok (condition-case-unless-debug err
              (progn (milk-test-scenario) t)
            (error (milk-test-check "no Lisp error" nil err)))))
  (ignore ok)
  (when (or (> milk-test-failed 0) (equal (getenv "MILK_TEST_DEBUG") "1"))
    (milk-test-log "--- transcript")
    (dolist (line (split-string (milk-test-transcript-text) "\n"))
      (milk-test-log "  | %s" line))
    (milk-test-log "--- messages %S" (reverse milk-test-messages))
    (milk-test-log "--- completing-read %S" (reverse milk-test-reads))
    ;; eglot's log of the messages both ways, its last 30,000 characters
    (dolist (servers (hash-table-values eglot--servers-by-project))
      (dolist (server servers)
        (with-current-buffer (jsonrpc-events-buffer server)
          (milk-test-log "--- events\n%s"
                         (buffer-substring-no-properties (max (point-min) (- (point-max) 30000))
                                                         (point-max)))))))
  (dolist (server (hash-table-values eglot--servers-by-project))
    (dolist (s server)
      (ignore-errors (eglot-shutdown s))))
  (milk-test-log "%s: %d passed, %d failed" milk-test-name milk-test-passed milk-test-failed)
  (kill-emacs (if (= milk-test-failed 0) 0 1)))
