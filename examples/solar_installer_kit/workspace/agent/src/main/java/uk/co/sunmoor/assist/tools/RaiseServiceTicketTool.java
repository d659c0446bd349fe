package uk.co.sunmoor.assist.tools;

import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.stereotype.Component;

import uk.co.sunmoor.assist.client.ServiceDeskClient;
import uk.co.sunmoor.assist.client.dto.ServiceTicketRequest;
import uk.co.sunmoor.assist.client.dto.ServiceTicket;

/**
 * Opens a ticket in the service desk queue (POST /api/v1/tickets). The service desk triages it
 * with the field-ops checklists and books any visit.
 */
@Component
public class RaiseServiceTicketTool {

    private final ServiceDeskClient serviceDesk;

    public RaiseServiceTicketTool(ServiceDeskClient serviceDesk) {
        this.serviceDesk = serviceDesk;
    }

    @Tool(name = "raise_service_ticket",
          description = "Raise a service ticket for a fault or problem with an installed system. "
                  + "Check get_system_status first where the fault could be a monitoring problem.")
    public ServiceTicket raiseServiceTicket(
            @ToolParam(description = "Sunmoor site ID, format SM-######") String siteId,
            @ToolParam(description = "One of: INVERTER, BATTERY, PANELS, MONITORING, ROOF_LEAK, BIRDS, OTHER") String faultCategory,
            @ToolParam(description = "What the customer reports, in their words, with any error code shown on the inverter") String summary) {
        return serviceDesk.create(new ServiceTicketRequest(siteId, faultCategory, summary));
    }
}
