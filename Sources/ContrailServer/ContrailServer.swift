// ContrailServer: the sync server (in progress).
import Contrail
