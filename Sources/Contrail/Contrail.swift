@_exported import struct Foundation.UUID
