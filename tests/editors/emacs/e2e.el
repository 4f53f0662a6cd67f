;;; e2e.el --- eglot and the real engram-ls, end to end, in `emacs --batch'  -*- lexical-binding: t -*-

;; Started by tests/editors/test_emacs.py as
;;   emacs --batch -l tests/editors/emacs/e2e.el
;; with HOME a fresh folder (no init file is read in batch; Debian's site-start still sets up
;; its elpa packages). Everything comes from the environment:
;;   ENGRAM_E2E_SETUP   a file holding docs/editors.md's Emacs configuration block, as written
;;   ENGRAM_E2E_SEARCH  a file holding its `engram/search' block, as written
;;   ENGRAM_E2E_VAULT   the vault copy
;;   ENGRAM_E2E_NOTE    the note to open, relative to the vault
;;   ENGRAM_E2E_MODE    "full" (every step) or "subfolder" (attach and search only)
;;   ENGRAM_E2E_OUT     where the JSON results go (rewritten after every step)
;; `engram-ls' is found on PATH, as the configuration block says.
;;
;; Each step records what a user would see (buffer text, the *xref* buffer, flymake's
;; diagnostics, a request's result); the Python side asserts on it. A step that fails records
;; its error and ends the run.

(package-initialize)
(require 'json)
(require 'subr-x)
(require 'cl-lib)

(defvar e2e-vault (file-name-as-directory (file-truename (getenv "ENGRAM_E2E_VAULT"))))
(defvar e2e-out (getenv "ENGRAM_E2E_OUT"))
(defvar e2e-mode (or (getenv "ENGRAM_E2E_MODE") "full"))
(defvar e2e-results (make-hash-table :test 'equal))
(defvar e2e-steps (make-hash-table :test 'equal))
(defvar e2e-started (float-time))
(puthash "steps" e2e-steps e2e-results)
(puthash "emacs" emacs-version e2e-results)

(setq make-backup-files nil
      create-lockfiles nil
      auto-save-default nil
      eglot-autoreconnect nil
      ;; M-? asks for the identifier, offering the one at point (eglot's is always the
      ;; position at point); batch Emacs cannot answer a prompt: take the default.
      xref-prompt-for-identifier nil)

(defun e2e-save ()
  (puthash "elapsed_s" (- (float-time) e2e-started) e2e-results)
  (with-temp-file e2e-out
    (insert (json-encode e2e-results))))

(defun e2e-wait (pred timeout what)
  "Run timers and read process output until PRED is non-nil; its value, or an error naming
WHAT after TIMEOUT seconds."
  (let ((end (+ (float-time) timeout)) value)
    (while (not (setq value (funcall pred)))
      (when (> (float-time) end)
        (error "Timed out after %s s waiting for %s" timeout what))
      (accept-process-output nil 0.05))
    value))

(defun e2e-idle ()
  "What an interactive Emacs does once the user stops typing: run the idle timers (eglot
sends the buffer's changes from one). Batch Emacs never becomes idle by itself."
  (sleep-for 0.01)
  (dolist (timer (copy-sequence timer-idle-list))
    (timer-event-handler timer)))

(defun e2e-key (keys)
  "Press KEYS: run the command they are bound to as the command loop does (pre- and
post-command hooks around it: completion-in-region's keymap, for one, ends in the latter).
Batch Emacs has no command loop."
  (let* ((command (key-binding (kbd keys)))
         (this-command command)
         (real-this-command command))
    (unless (commandp command)
      (error "%s runs no command here (%S)" keys command))
    (run-hooks 'pre-command-hook)
    (call-interactively command nil (kbd keys))
    (run-hooks 'post-command-hook)
    (setq last-command command)
    command))

(defun e2e-rel (file)
  (let ((true (file-truename file)))
    (if (string-prefix-p e2e-vault true) (substring true (length e2e-vault)) true)))

(defun e2e-line-text ()
  (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(defun e2e-read-file (file)
  (with-temp-buffer
    (insert-file-contents file)
    (buffer-string)))

(defun e2e-events-tail ()
  "The end of eglot's events buffer (the messages exchanged), for a failure's report."
  (let ((events (seq-find (lambda (b) (string-match-p "^\\*EGLOT .* events\\*$" (buffer-name b)))
                          (buffer-list))))
    (if (null events)
        "(no eglot events buffer)"
      (with-current-buffer events
        (buffer-substring-no-properties (max (point-min) (- (point-max) 6000)) (point-max))))))

(defmacro e2e-step (name &rest body)
  "Run BODY as step NAME; its value (a hash table or alist) is recorded under NAME."
  (declare (indent 1))
  `(progn
     (puthash "current" ,name e2e-results)
     (e2e-save)
     (condition-case err
         (let ((started (float-time))
               (value (progn ,@body)))
           (when (hash-table-p value)
             (puthash "seconds" (- (float-time) started) value))
           (puthash ,name value e2e-steps)
           (e2e-save))
       (error
        (puthash "events" (e2e-events-tail) e2e-results)
        (puthash "failed_step" ,name e2e-results)
        (puthash "error" (error-message-string err) e2e-results)
        (e2e-finish 1)))))

(defun e2e-table (&rest pairs)
  "A hash table from KEY VALUE pairs (a JSON object)."
  (let ((table (make-hash-table :test 'equal)))
    (while pairs
      (puthash (pop pairs) (pop pairs) table))
    table))

(defun e2e-bool (value)
  "VALUE as a JSON boolean."
  (if value t :json-false))

(defun e2e-server () (eglot-current-server))

(defun e2e-request (method params)
  (jsonrpc-request (e2e-server) method params))

(defun e2e-status ()
  (e2e-request :engram/status (make-hash-table)))

(defun e2e-ready-status ()
  "engram/status once every vault is built."
  (e2e-wait (lambda ()
              (let* ((status (e2e-status))
                     (vaults (append (plist-get status :vaults) nil)))
                (and vaults
                     (cl-every (lambda (v) (and (equal (plist-get v :state) "ready")
                                                (memq (plist-get v :building) '(nil :json-false))))
                               vaults)
                     status)))
            30 "the index to be ready"))

(defun e2e-search-paths (params)
  (let ((result (e2e-request :engram/search params)))
    (cons (plist-get result :total)
          (vconcat (mapcar (lambda (hit) (plist-get hit :path))
                           (plist-get result :results))))))

(defun e2e-finish (code)
  (puthash "done" (= code 0) e2e-results)
  (e2e-save)
  (when (e2e-server)
    (ignore-errors (eglot-shutdown (e2e-server) nil 5)))
  (kill-emacs code))

;; -- the user's configuration, as docs/editors.md writes it ---------------------------------

(e2e-step "setup"
  (load (getenv "ENGRAM_E2E_SETUP") nil t t)
  (require 'eglot)
  (e2e-table "eglot_program" (vconcat (cdr (assq 'markdown-mode eglot-server-programs)))
             "engram_ls" (executable-find "engram-ls")))

(defvar e2e-note (expand-file-name (getenv "ENGRAM_E2E_NOTE") e2e-vault))
(defvar e2e-buffer nil)

;; -- M-x eglot in a note --------------------------------------------------------------------

(e2e-step "attach"
  (setq e2e-buffer (find-file e2e-note))
  (call-interactively #'eglot)
  (e2e-wait (lambda () (and (e2e-server) eglot--managed-mode)) 30 "eglot to manage the note")
  (let* ((server (e2e-server))
         (status (e2e-ready-status)))
    (e2e-table "major_mode" (symbol-name major-mode)
               "project_root" (file-name-as-directory
                               (file-truename (project-root (eglot--project server))))
               "vaults" (vconcat (mapcar (lambda (v) (plist-get v :root))
                                         (plist-get status :vaults)))
               "notes" (plist-get (aref (plist-get status :vaults) 0) :notes)
               "c_m_i" (symbol-name (key-binding (kbd "C-M-i")))
               "tab" (symbol-name (key-binding (kbd "TAB"))))))

(when (equal e2e-mode "subfolder")
  (e2e-step "search_outside_the_folder"
    (let ((found (e2e-search-paths '(:tags ["sqlite"]))))
      (e2e-table "total" (car found) "paths" (cdr found)
                 "folder_index" (e2e-bool
                                 (file-exists-p
                                  (expand-file-name ".engram" (file-name-directory e2e-note)))))))
  (e2e-finish 0))

;; -- completion in frontmatter: C-M-i, as the configuration binds it ------------------------

(defun e2e-goto-line-text (text)
  (goto-char (point-min))
  (unless (search-forward-regexp (concat "^" (regexp-quote text) "$") nil t)
    (error "No line %S in %s" text (buffer-name)))
  (beginning-of-line))

(e2e-step "completion"
  (with-current-buffer e2e-buffer
    (let ((original (buffer-string))
          unique candidates)
      ;; `  - perf' after the last block item of `tags:': one topic starts so.
      (e2e-goto-line-text "  - Python")
      (end-of-line)
      (insert "\n  - perf")
      (e2e-key "C-M-i")
      (setq unique (e2e-line-text))
      ;; `  - me': the candidates, as completion-at-point gets them.
      (insert "\n  - me")
      (let* ((capf (eglot-completion-at-point))
             (table (nth 2 capf)))
        (setq candidates (all-completions "me" table)))
      (erase-buffer)
      (insert original)
      (set-buffer-modified-p nil)
      (e2e-idle)
      (e2e-table "unique" unique "candidates" (vconcat candidates)))))

;; -- workspace symbols in *xref* ------------------------------------------------------------

(e2e-step "symbols"
  (with-current-buffer e2e-buffer
    (xref-find-apropos "SQLite field notes")
    (let ((xref (get-buffer "*xref*")))
      (unless xref (error "No *xref* buffer"))
      (e2e-table "xref" (with-current-buffer xref
                          (buffer-substring-no-properties (point-min) (point-max)))))))

;; -- engram/search through jsonrpc-request, as docs/editors.md writes it --------------------

(e2e-step "search"
  (with-current-buffer e2e-buffer
    (let* ((form (car (read-from-string (e2e-read-file (getenv "ENGRAM_E2E_SEARCH")))))
           (result (eval form t)))
      (e2e-table "total" (plist-get result :total)
                 "paths" (vconcat (mapcar (lambda (hit) (plist-get hit :path))
                                          (plist-get result :results)))
                 "served_by" (plist-get (plist-get result :index) :served_by)))))

;; -- M-. on a wiki-link, M-? for its backlinks ----------------------------------------------

(e2e-step "definition"
  (with-current-buffer e2e-buffer
    (goto-char (point-min))
    (search-forward "[[sqlite#Write-ahead log]]")
    (backward-char 5)
    (e2e-key "M-.")
    (prog1 (e2e-table "file" (e2e-rel (buffer-file-name))
                      "line" (line-number-at-pos)
                      "text" (e2e-line-text))
      (switch-to-buffer e2e-buffer))))

(e2e-step "references"
  (with-current-buffer e2e-buffer
    (goto-char (point-min))
    (search-forward "[[fts5]]")
    (backward-char 4)
    (e2e-key "M-?")
    (let ((xref (get-buffer "*xref*")))
      (prog1 (e2e-table "xref" (if xref
                                   (with-current-buffer xref
                                     (buffer-substring-no-properties (point-min) (point-max)))
                                 (format "jumped to %s:%d" (e2e-rel (buffer-file-name))
                                         (line-number-at-pos))))
        (switch-to-buffer e2e-buffer)))))

;; -- diagnostics: flymake, after a date that does not parse ---------------------------------

(defun e2e-diagnostics ()
  (mapcar (lambda (d)
            (e2e-table "line" (line-number-at-pos (flymake-diagnostic-beg d))
                       "type" (symbol-name (flymake-diagnostic-type d))
                       "text" (flymake-diagnostic-text d)))
          (flymake-diagnostics)))

(e2e-step "diagnostics"
  (with-current-buffer e2e-buffer
    (flymake-start)  ; batch Emacs shows no window: flymake waits for it otherwise
    (let ((original (buffer-string)) broken fixed)
      (e2e-goto-line-text "date: 2024-02-12")
      (search-forward "2024-02-12")
      (replace-match "2024-13-45")
      (e2e-idle)
      (setq broken (e2e-wait (lambda () (flymake-start) (e2e-diagnostics))
                             10 "a diagnostic for the bad date"))
      (erase-buffer)
      (insert original)
      (set-buffer-modified-p nil)
      (e2e-idle)
      (e2e-wait (lambda () (flymake-start) (null (e2e-diagnostics)))
                10 "the diagnostic to go once the date is fixed")
      (setq fixed (e2e-diagnostics))
      (e2e-table "flymake_mode" (e2e-bool flymake-mode)
                 "broken" (vconcat broken)
                 "fixed" (vconcat fixed)))))

;; -- a save, seen by the next search --------------------------------------------------------

(e2e-step "save"
  (with-current-buffer e2e-buffer
    (goto-char (point-max))
    (insert "\nSaved from Emacs: emacsbatchword.\n")
    (let ((before (car (e2e-search-paths '(:query "emacsbatchword")))))
      (save-buffer)
      (let ((after (e2e-wait (lambda ()
                               (let ((found (e2e-search-paths '(:query "emacsbatchword"))))
                                 (and (equal (car found) 1) found)))
                             10 "the saved word in engram/search")))
        (e2e-table "before" before "total" (car after) "paths" (cdr after))))))

(e2e-finish 0)

;;; e2e.el ends here
