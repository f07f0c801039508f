"""What the HTTP faces (``serve`` and ``gateway --port``) share: ``guard`` (the one guard in front of both:
Host, Origin, token and wrong-token count, body size, with the same answers on both faces), ``listening``
(the listening socket, bound before anything starts, a port in use said plainly, ``TCP_NODELAY`` on every
connection) and ``token_guesses`` (wrong tokens counted against who sent them, so guessing is slow and
nobody else can lock the user out). A private package with plain module names inside, like ``mcpdeck._util``."""
