"""The store's tables, one repository per concern, over one ``Database``.

Each repository holds the SQL of its tables and nothing else: none imports another (an
import-linter contract says so); what they share (the records, the run statuses, the
lease fence) is in ``shared``. ``graph.service.store.Store`` composes them over one
connection, so a transaction that spans tables still runs on one lock.
"""
