;;; publish.el --- build the Ember help centre from Org  -*- lexical-binding: t; -*-
;; Run from CI:  emacs --batch -l publish.el -f org-publish-all
;; Output goes to public/, which the web team syncs to help.emberfitness.co.uk.

(require 'ox-publish)

(setq org-html-validation-link nil
      org-html-head-include-default-style nil
      org-export-with-section-numbers nil
      org-export-time-stamp-file nil)

(setq org-publish-project-alist
      '(("help-pages"
         :base-directory "pages/"
         :base-extension "org"
         :recursive t
         :publishing-directory "public/"
         :publishing-function org-html-publish-to-html
         :auto-sitemap nil)
        ("help-assets"
         :base-directory "assets/"
         :base-extension "css\\|js\\|svg\\|png"
         :publishing-directory "public/assets/"
         :publishing-function org-publish-attachment)
        ("help" :components ("help-pages" "help-assets"))))

(provide 'publish)
;;; publish.el ends here
