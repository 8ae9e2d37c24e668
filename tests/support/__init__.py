"""Helpers the tests share: servers that play Dify's APIs, canned streams, shared inputs. Tests import from here,
never from another test or from conftest."""

from gcite import ROOT

__all__ = ["ROOT"]
