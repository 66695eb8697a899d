"""Framework integrations: npuprof.integrations.{mindspore,tensorflow,pyacl}.

Each is a plugin like any third-party one; importing this package imports no framework.
"""
