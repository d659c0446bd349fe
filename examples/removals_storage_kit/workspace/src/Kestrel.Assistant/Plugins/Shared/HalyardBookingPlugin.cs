using Kestrel.Halyard.Client;

namespace Kestrel.Assistant.Plugins.Halyard;

/// <summary>Shared state for the Halyard booking functions (one file per function under Plugins/Halyard/).</summary>
public sealed partial class HalyardBookingPlugin
{
    private readonly BookingServiceSoapClient _bookingService;

    public HalyardBookingPlugin(BookingServiceSoapClient bookingService) => _bookingService = bookingService;
}
