"""G-Cite's web search, as a library: the plugin's `web_search` tool and its credential check are thin adapters over
it, and `gcite acl` uses its HTTP client.

One subject per module:
- `http_client`  one HTTP exchange: a total deadline, a size-capped streaming read, redirects followed only to the
                 origin the request was sent to (public APIs of requests and urllib3 only)
- `providers`    the provider table (endpoints, caps, freshness values), credentials, choosing a provider
- `params`       the tool's parameters, each checked with an error naming it
- `redaction`    every configured key and URL out of every message and output
- `errors`       SearchError / SearchInputError and each provider's error text
- `client`       a provider's calls: retries, back-off, the search's time budget, page caps, messages naming the
                 provider
- `fetchers`     each provider's requests and paging, feeding the results kept
- `results`      the results kept: at most top_k, mapped only while wanted, duplicates dropped
- `mappers`      one flat item per provider result
- `search`       a whole search, the credential check and the tool's text summary

No key and no URL is ever put into an exception message, a note or a log line: messages name the provider, the
HTTP status and the provider's own error text, with every configured secret and base URL redacted from it.
"""
