"""Release tooling: the repository turned into what is shipped, and checked as its receivers check it.

- `package.py`: the `.difypkg` built as the plugin daemon's packager builds it, validated first (the manifest, the
  tools' and endpoints' declarations), and its unique identifier;
- `signing.py`: signing and verifying a package exactly as the daemon does;
- `marketplace.py`: the Dify Marketplace's automated checks on a package, and the publisher's details.

Why a room of its own: these run when a version is cut (`gcite package`, `keygen`, `sign`, `verify`, `release`),
read the repository as files, and change nothing a builder authors; what makes the nodes, chatflows and schemas is
`gcite.authoring`, which may use this room (a DSL names the package's identifier) but is never used by it.
"""
